import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { ErrorNotice, fieldErrorProps } from '../components/feedback';
import { useDocumentTitle } from '../hooks';
import { ThemeToggle } from '../components/theme-toggle';
import { keyFromPaste } from '../lib/api-key';

/**
 * Why a key was not taken, in plain words (the API's own 401 message speaks of HTTP headers,
 * which is right for a client program and no help to a person at a sign-in form).
 */
export function signInError(err: unknown, key: string): unknown {
  if (!(err instanceof ApiError) || err.status !== 401) return err;
  const shape = /^cms_[A-Za-z0-9]{16}_[A-Za-z0-9]{32}$/.test(key)
    ? 'It may have been revoked, or belong to another installation of the service.'
    : 'It does not look like a whole key: a key starts with “cms_” and is 53 characters long, so part of it may be missing or mistyped.';
  return new Error(`This API key was not accepted. ${shape} Paste it again, or ask an administrator for a new one.`);
}

export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn(key: string): void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  useDocumentTitle('Sign in');
  // Shown after a sign-out (the notice says why): the focus starts here, not on the page's body.
  useEffect(() => {
    if (notice) heading.current?.focus();
  }, []);

  async function submit(event: Event) {
    event.preventDefault();
    const trimmed = keyFromPaste(key);
    if (trimmed instanceof Error || trimmed === '') {
      setError(trimmed instanceof Error ? trimmed : new Error('Enter an API key.'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api.checkKey(trimmed);
      onSignedIn(trimmed);
    } catch (err) {
      setError(signInError(err, trimmed));
      setBusy(false);
    }
  }

  return (
    <main class="sign-in" id="main">
      <form class="card" onSubmit={submit} aria-labelledby="sign-in-title" noValidate>
        <p class="brand">
          <span class="logo" aria-hidden="true">
            C
          </span>
          Copilot Management
        </p>
        <div class="sign-in-head">
          <h1 id="sign-in-title" tabIndex={-1} ref={heading}>
            Sign in
          </h1>
          <ThemeToggle />
        </div>
        {notice && (
          <div class="notice notice-warn" role="status">
            <p>{notice}</p>
          </div>
        )}
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          autoCapitalize="off"
          placeholder="cms_…"
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          {...fieldErrorProps(Boolean(error), 'sign-in-error', 'api-key-help')}
          required
        />
        <p id="api-key-help" class="hint">
          The key stays in this browser tab only (session storage) and is sent only to this service. On its first start the service writes an admin key to{' '}
          <code>DATA_DIR/bootstrap-admin-key</code>.
        </p>
        <ErrorNotice error={error} id="sign-in-error" />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
