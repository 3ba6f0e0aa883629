import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNotice } from '../components/feedback';

export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn(key: string): void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  async function submit(event: Event) {
    event.preventDefault();
    const trimmed = key.trim();
    if (trimmed === '') {
      setError(new Error('Enter an API key.'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await api.checkKey(trimmed);
      onSignedIn(trimmed);
    } catch (err) {
      setError(err);
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
        <h1 id="sign-in-title">Sign in</h1>
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
          aria-describedby="api-key-help"
          required
        />
        <p id="api-key-help" class="hint">
          The key stays in this browser tab only (session storage) and is sent only to this service. On its first start the service writes an admin key to{' '}
          <code>DATA_DIR/bootstrap-admin-key</code>.
        </p>
        <ErrorNotice error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
