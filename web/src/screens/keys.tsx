import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type ApiKey, type ApiKeyCreated, type Copilot } from '../api';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorNotice, Loading, SuccessNotice } from '../components/feedback';
import { useDocumentTitle, useLoad } from '../hooks';
import { formatTimestamp, plural } from '../lib/format';
import { botChoices, SCOPE_HELP, type Scope } from '../lib/permissions';
import { usePermissions } from '../use-permissions';

/**
 * API keys (admin): create one with scopes and bots (its secret shown once), list them, revoke
 * one after a confirmation. A key limited to some bots sees and makes only keys within them;
 * the form offers only the scopes and bots this key may grant (the API enforces the same).
 */
export function KeysScreen() {
  const permissions = usePermissions();
  useDocumentTitle('Keys');
  const keys = useLoad((signal) => (permissions.mayManageKeys ? api.listKeys(signal) : Promise.resolve([])), [permissions.mayManageKeys]);
  // Names for the bots of each key, and the choices of the form.
  const copilots = useLoad((signal) => (permissions.mayManageKeys ? api.allCopilots(signal) : Promise.resolve([])), [permissions.mayManageKeys]);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  // A new object per revocation, so that its notice takes the focus each time (the row's button is gone).
  const [revoked, setRevoked] = useState<{ text: string } | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const [showRevoked, setShowRevoked] = useState(false);

  const names = useMemo(() => new Map((copilots.data ?? []).map((c) => [c.id, c.name])), [copilots.data]);
  const all = keys.data ?? [];
  const rows = showRevoked ? all : all.filter((k) => k.revoked_at === null);
  const revokedCount = all.length - all.filter((k) => k.revoked_at === null).length;

  if (!permissions.mayManageKeys) {
    return (
      <section aria-labelledby="page-title">
        <h1 id="page-title" tabIndex={-1}>
          API keys
        </h1>
        <div class="notice notice-warn" role="status">
          <p>This key may not manage keys: that needs a key with the admin scope.</p>
        </div>
      </section>
    );
  }

  return (
    <section aria-labelledby="page-title" class="keys-screen">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1} ref={heading}>
          API keys
        </h1>
        <button
          type="button"
          class="primary"
          aria-expanded={creating}
          aria-controls="create-key"
          onClick={() => {
            setCreating(!creating);
            setRevoked(null);
          }}
        >
          {creating ? 'Close' : 'New key'}
        </button>
      </div>
      <p class="muted">
        Keys let people and programs use this service. Each key has scopes (what it may do) and may be limited to some copilots.
        {permissions.grantableBots !== null &&
          ` This key is limited to ${plural(permissions.grantableBots.length, 'copilot')}: it sees and makes only keys within them.`}
      </p>

      {created && (
        <NewKeySecret
          created={created}
          onDone={() => {
            setCreated(null);
            // The button goes with the secret: the focus goes back to the screen.
            heading.current?.focus();
          }}
        />
      )}
      {revoked && <SuccessNotice focusKey={revoked}>{revoked.text}</SuccessNotice>}
      {creating && (
        <CreateKey
          copilots={copilots.data}
          copilotsError={copilots.error}
          onCancel={() => setCreating(false)}
          onCreated={(next) => {
            setCreating(false);
            setCreated(next);
            keys.reload(true);
          }}
        />
      )}

      <div class="section-head">
        <h2>Keys</h2>
        {revokedCount > 0 && (
          <label class="check">
            <input type="checkbox" checked={showRevoked} onChange={(e) => setShowRevoked((e.target as HTMLInputElement).checked)} />
            Show revoked keys ({revokedCount})
          </label>
        )}
      </div>
      <ErrorNotice error={keys.error}>
        <button type="button" onClick={() => keys.reload()}>
          Try again
        </button>
      </ErrorNotice>
      {keys.loading && !keys.data && <Loading label="Loading the keys…" />}
      {keys.data && rows.length === 0 && <p class="empty">No keys to show.</p>}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="keys-table stack-table">
            <caption class="visually-hidden">API keys, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Scopes</th>
                <th scope="col">Copilots</th>
                <th scope="col" class="opt">
                  Created
                </th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((k) => (
                <KeyRow
                  key={k.id}
                  apiKey={k}
                  names={names}
                  own={k.id === permissions.identity?.id}
                  onRevoked={() => {
                    setRevoked({ text: `Revoked “${k.name || k.id}”. It stops working at once.` });
                    setCreated(null);
                    keys.reload(true);
                  }}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function BotNames({ bots, names }: { bots: readonly string[] | null; names: ReadonlyMap<string, string> }) {
  if (bots === null) return <span>Every copilot</span>;
  return (
    <ul class="plain-list">
      {bots.map((id) => (
        <li key={id}>{names.has(id) ? <bdi>{names.get(id)}</bdi> : <code class="clip">{id}</code>}</li>
      ))}
    </ul>
  );
}

function KeyRow({ apiKey: k, names, own, onRevoked }: { apiKey: ApiKey; names: ReadonlyMap<string, string>; own: boolean; onRevoked(): void }) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const label = k.name || k.id;

  async function confirm() {
    setBusy(true);
    setError(null);
    try {
      await api.revokeKey(k.id);
      setOpen(false);
      onRevoked();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <tr data-key-id={k.id} data-revoked={k.revoked_at !== null}>
      <th scope="row">
        {k.name ? <bdi>{k.name}</bdi> : <span class="muted">Unnamed</span>}
        {own && <span class="badge badge-own">this key</span>}
        <code class="sub">{k.id}</code>
      </th>
      <td data-label="Scopes">
        <ul class="scope-list" aria-label="Scopes">
          {k.scopes.map((s) => (
            <li key={s}>
              <code>{s}</code>
            </li>
          ))}
        </ul>
      </td>
      <td data-label="Copilots">
        <BotNames bots={k.bots} names={names} />
      </td>
      <td class="opt nowrap" data-label="Created">
        {formatTimestamp(k.created_at)}
      </td>
      <td class="nowrap" data-label="Status">
        {k.revoked_at === null ? <span class="badge badge-live">Active</span> : <span class="badge badge-failed">Revoked</span>}
        {k.revoked_at !== null && <span class="sub">{formatTimestamp(k.revoked_at)}</span>}
      </td>
      <td class="nowrap">
        {k.revoked_at === null && (
          <button type="button" class="danger small" aria-label={`Revoke ${label}…`} onClick={() => setOpen(true)}>
            Revoke…
          </button>
        )}
        <ConfirmDialog
          open={open}
          title={`Revoke “${label}”?`}
          confirmLabel="Revoke key"
          busy={busy}
          error={error}
          onCancel={() => {
            setOpen(false);
            setError(null);
          }}
          onConfirm={confirm}
        >
          <p>
            Anything using the key <code>{k.id}</code> stops working at once, on every instance of the service. This cannot be undone.
          </p>
          {own && (
            <p>
              <strong>This is the key you are signed in with:</strong> you will be signed out.
            </p>
          )}
        </ConfirmDialog>
      </td>
    </tr>
  );
}

/** The new key's secret, shown once, with a copy button. */
function NewKeySecret({ created, onDone }: { created: ApiKeyCreated; onDone(): void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<string | null>(null);

  useEffect(() => heading.current?.focus(), [created.key]);

  async function copy() {
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied('Copied to the clipboard.');
    } catch {
      // No clipboard access (a page served over plain HTTP, say): select the key for Ctrl+C.
      input.current?.select();
      setCopied('Selected: press Ctrl+C (⌘C on a Mac) to copy it.');
    }
  }

  return (
    <section class="card key-created" aria-labelledby="created-title" data-testid="new-key">
      <h2 id="created-title" ref={heading} tabIndex={-1}>
        Copy the new key now
      </h2>
      <p>
        <strong>You will not see it again:</strong> the service keeps only a hash of it. Store it where its user can find it (a password manager, a secret
        store).
      </p>
      <div class="secret-row">
        <label for="new-key-value" class="visually-hidden">
          The new API key
        </label>
        <input
          id="new-key-value"
          ref={input}
          class="secret"
          readOnly
          value={created.key}
          spellcheck={false}
          autocomplete="off"
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
        <button type="button" class="primary" onClick={copy}>
          Copy
        </button>
      </div>
      {copied && (
        <p class="hint" role="status">
          {copied}
        </p>
      )}
      <p class="muted">
        Key <code>{created.id}</code>
        {created.name && <> (“{created.name}”)</>}: {created.scopes.join(', ')};{' '}
        {created.bots === null ? 'every copilot' : plural(created.bots.length, 'copilot')}.
      </p>
      <div class="actions">
        <button type="button" onClick={onDone}>
          Done: hide the key
        </button>
      </div>
    </section>
  );
}

function CreateKey({
  copilots,
  copilotsError,
  onCancel,
  onCreated,
}: {
  copilots: Copilot[] | undefined;
  copilotsError: unknown;
  onCancel(): void;
  onCreated(created: ApiKeyCreated): void;
}) {
  const permissions = usePermissions();
  const limited = permissions.grantableBots !== null;
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<ReadonlySet<Scope>>(new Set());
  const [everyBot, setEveryBot] = useState(!limited);
  const [bots, setBots] = useState<ReadonlySet<string>>(new Set());
  const [botFilter, setBotFilter] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  // The bots this key may hand on: every copilot, or only its own, by name (null while the list loads).
  const offered = useMemo(() => botChoices(copilots, Boolean(copilotsError), permissions.grantableBots), [copilots, copilotsError, permissions.grantableBots]);
  const choices = offered ?? [];
  const filter = botFilter.trim().toLowerCase();
  const shown = filter ? choices.filter((c) => c.name.toLowerCase().includes(filter) || c.id.includes(filter)) : choices;

  function toggle<T>(set: ReadonlySet<T>, value: T, on: boolean): Set<T> {
    const next = new Set(set);
    if (on) next.add(value);
    else next.delete(value);
    return next;
  }

  async function submit(event: Event) {
    event.preventDefault();
    if (scopes.size === 0) {
      setError(new Error('Choose at least one scope.'));
      return;
    }
    if (!everyBot && bots.size === 0) {
      setError(
        new Error(
          limited
            ? 'Choose at least one copilot: this key may only make keys limited to its own copilots.'
            : 'Choose at least one copilot, or “Every copilot”.',
        ),
      );
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const created = await api.createKey({
        scopes: permissions.grantableScopes.filter((s) => scopes.has(s)),
        ...(!everyBot && { bots: choices.filter((c) => bots.has(c.id)).map((c) => c.id) }),
        ...(name.trim() && { name: name.trim() }),
      });
      onCreated(created);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }

  return (
    <form id="create-key" class="card form" onSubmit={submit} aria-labelledby="create-key-title" noValidate>
      <h2 id="create-key-title">New key</h2>
      <div class="field">
        <label for="key-name">Name</label>
        <input
          id="key-name"
          value={name}
          maxLength={200}
          placeholder="Who or what uses it, e.g. “CI deploys”"
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
      </div>
      <fieldset class="scopes">
        <legend>Scopes</legend>
        {permissions.grantableScopes.map((s) => (
          <label key={s} class="check scope-choice">
            <input type="checkbox" checked={scopes.has(s)} onChange={(e) => setScopes(toggle(scopes, s, (e.target as HTMLInputElement).checked))} />
            <span>
              <code>{s}</code> <span class="muted">— {SCOPE_HELP[s]}</span>
            </span>
          </label>
        ))}
      </fieldset>
      <fieldset class="bots">
        <legend>Copilots</legend>
        {limited ? (
          <p class="hint">This key is limited to the copilots below, so the new key must be limited to some of them.</p>
        ) : (
          <div class="radio-row">
            <label class="check">
              <input type="radio" name="key-bots" checked={everyBot} onChange={() => setEveryBot(true)} />
              Every copilot (also those created later)
            </label>
            <label class="check">
              <input type="radio" name="key-bots" checked={!everyBot} onChange={() => setEveryBot(false)} />
              Only the copilots I choose
            </label>
          </div>
        )}
        {!everyBot && (
          <>
            {choices.length > 8 && (
              <div class="field">
                <label for="key-bot-filter">Find a copilot</label>
                <input id="key-bot-filter" type="search" value={botFilter} onInput={(e) => setBotFilter((e.target as HTMLInputElement).value)} />
              </div>
            )}
            <ErrorNotice error={copilotsError} />
            {offered === null && <Loading label="Loading the copilots…" />}
            {copilots !== undefined && choices.length === 0 && <p class="muted">There are no copilots yet.</p>}
            <div class="bot-choices">
              {shown.map((c) => (
                <label key={c.id} class="check">
                  <input type="checkbox" checked={bots.has(c.id)} onChange={(e) => setBots(toggle(bots, c.id, (e.target as HTMLInputElement).checked))} />
                  <span class="clip">{c.name}</span>
                </label>
              ))}
            </div>
            {bots.size > 0 && <p class="hint">{plural(bots.size, 'copilot')} chosen.</p>}
          </>
        )}
      </fieldset>
      <ErrorNotice error={error} />
      <div class="actions">
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
    </form>
  );
}
