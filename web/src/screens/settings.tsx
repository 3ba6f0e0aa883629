import { useRef, useState } from 'preact/hooks';
import { api, ApiError, type Copilot, type CopilotChanges, type CopilotStatus } from '../api';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorNotice, errorMessage, FieldError, fieldErrorProps, fieldsInError, SuccessNotice } from '../components/feedback';
import { useLoad } from '../hooks';
import { formatBytes, formatTimestamp } from '../lib/format';
import { descriptionMediaType } from '../lib/upload';
import { flash, href, navigate } from '../router';
import { usePermissions } from '../use-permissions';

const FLAGS = [
  { key: 'enhanced_privacy', label: 'Enhanced privacy' },
  { key: 'smart_sync', label: 'Smart sync' },
  { key: 'is_premade_demo_template', label: 'Pre-made demo template' },
] as const;

type Flag = (typeof FLAGS)[number]['key'];

export function SettingsScreen({ copilot, onChange }: { copilot: Copilot; onChange(next: Copilot): void }) {
  // A key without copilots:write for this copilot sees its settings, never a form that would fail.
  const readOnly = !usePermissions().may('copilots:write', copilot.id);
  return (
    <div class="stack">
      {readOnly && (
        <div class="notice notice-warn" role="status" data-testid="read-only">
          <p>This key may read this copilot but not change it (it lacks the copilots:write scope for it).</p>
        </div>
      )}
      <EditCopilot copilot={copilot} onChange={onChange} readOnly={readOnly} />
      <ApiDescription copilot={copilot} onChange={onChange} readOnly={readOnly} />
      {!readOnly && <DeleteCopilot copilot={copilot} />}
    </div>
  );
}

function EditCopilot({ copilot, onChange, readOnly }: { copilot: Copilot; onChange(next: Copilot): void; readOnly: boolean }) {
  const [name, setName] = useState(copilot.name);
  const [website, setWebsite] = useState(copilot.website);
  const [status, setStatus] = useState<CopilotStatus>(copilot.status);
  const [prompt, setPrompt] = useState(copilot.prompt_message);
  const [flags, setFlags] = useState<Record<Flag, boolean>>({
    enhanced_privacy: copilot.enhanced_privacy === 1,
    smart_sync: copilot.smart_sync === 1,
    is_premade_demo_template: copilot.is_premade_demo_template === 1,
  });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState<string | null>(null);

  function changes(): CopilotChanges {
    const out: CopilotChanges = {};
    if (name !== copilot.name) out.name = name.trim();
    if (website !== copilot.website) out.website = website.trim();
    if (status !== copilot.status) out.status = status;
    if (prompt !== copilot.prompt_message) out.prompt_message = prompt;
    for (const { key } of FLAGS) if (flags[key] !== (copilot[key] === 1)) out[key] = flags[key];
    return out;
  }

  const invalid = fieldsInError(error);

  async function submit(event: Event) {
    event.preventDefault();
    if (name.trim() === '') {
      setError(new FieldError('name', 'Enter a name for the copilot.'));
      setSaved(null);
      return;
    }
    const patch = changes();
    if (Object.keys(patch).length === 0) {
      setSaved('Nothing changed.');
      return;
    }
    setBusy(true);
    setError(null);
    setSaved(null);
    try {
      const next = await api.updateCopilot(copilot.id, patch);
      setName(next.name);
      setWebsite(next.website);
      setStatus(next.status);
      setPrompt(next.prompt_message);
      setFlags({
        enhanced_privacy: next.enhanced_privacy === 1,
        smart_sync: next.smart_sync === 1,
        is_premade_demo_template: next.is_premade_demo_template === 1,
      });
      onChange(next);
      setSaved('Saved.');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="card form" onSubmit={submit} aria-labelledby="edit-title" noValidate>
      <h2 id="edit-title">Settings</h2>
      <div class="grid-2">
        <div class="field">
          <label for="edit-name">Name</label>
          <input
            id="edit-name"
            disabled={readOnly}
            value={name}
            required
            maxLength={200}
            {...fieldErrorProps(invalid.has('name'), 'edit-copilot-error')}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        </div>
        <div class="field">
          <label for="edit-website">Website</label>
          <input
            id="edit-website"
            disabled={readOnly}
            inputMode="url"
            value={website}
            {...fieldErrorProps(invalid.has('website'), 'edit-copilot-error')}
            onInput={(e) => setWebsite((e.target as HTMLInputElement).value)}
          />
        </div>
      </div>
      <div class="field">
        <label for="edit-status">Status</label>
        <select id="edit-status" disabled={readOnly} value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value as CopilotStatus)}>
          <option value="draft">Draft</option>
          <option value="live">Live</option>
        </select>
      </div>
      <div class="field">
        <label for="edit-prompt">Prompt message</label>
        <textarea
          id="edit-prompt"
          disabled={readOnly}
          rows={4}
          value={prompt}
          {...fieldErrorProps(invalid.has('prompt_message'), 'edit-copilot-error')}
          onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <fieldset class="flags" disabled={readOnly}>
        <legend>Options</legend>
        {FLAGS.map(({ key, label }) => (
          <label key={key} class="check">
            <input type="checkbox" checked={flags[key]} onChange={(e) => setFlags({ ...flags, [key]: (e.target as HTMLInputElement).checked })} />
            {label}
          </label>
        ))}
      </fieldset>
      <dl class="facts">
        <div>
          <dt>Id</dt>
          <dd>
            <code>{copilot.id}</code>
          </dd>
        </div>
        <div>
          <dt>Token</dt>
          <dd>
            <code>{copilot.token}</code>
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{formatTimestamp(copilot.created_at)}</dd>
        </div>
        <div>
          <dt>Updated</dt>
          <dd>{formatTimestamp(copilot.updated_at)}</dd>
        </div>
      </dl>
      <ErrorNotice error={error} id="edit-copilot-error" />
      {saved && <SuccessNotice>{saved}</SuccessNotice>}
      <div class="actions" hidden={readOnly}>
        <button type="submit" class="primary" disabled={busy || readOnly}>
          {busy ? 'Saving…' : 'Save changes'}
        </button>
      </div>
    </form>
  );
}

function ApiDescription({ copilot, onChange, readOnly }: { copilot: Copilot; onChange(next: Copilot): void; readOnly: boolean }) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const [url, setUrl] = useState(/^https?:\/\//i.test(copilot.swagger_url) ? copilot.swagger_url : '');
  const input = useRef<HTMLInputElement>(null);
  // The name the stored document was uploaded under (kept by the service since issue 17).
  const summary = useLoad(
    (signal) => (copilot.swagger_url ? api.copilotSummaries([copilot.id], signal) : Promise.resolve([])),
    [copilot.id, copilot.swagger_url],
  );
  const originalName = summary.data?.[0]?.swagger_file_name ?? null;

  async function run(label: string, action: () => Promise<Copilot>, success: string, file?: File) {
    setBusy(label);
    setError(null);
    setDone(null);
    try {
      onChange(await action());
      setDone(success);
    } catch (err) {
      // A file over the limit: say how large it is beside the limit.
      setError(err instanceof ApiError && err.status === 413 && file ? new Error(`${file.name} is ${formatBytes(file.size)}. ${errorMessage(err)}`) : err);
    } finally {
      setBusy(null);
    }
  }

  async function upload(file: File) {
    const head = await file.slice(0, 64).text();
    const type = descriptionMediaType(file.name, head);
    await run(`Uploading ${file.name}…`, () => api.uploadDescription(copilot.id, file, type, file.name), `Uploaded ${file.name}.`, file);
    if (input.current) input.current.value = '';
  }

  function onDrop(event: DragEvent) {
    event.preventDefault();
    setDragging(false);
    const files = event.dataTransfer?.files;
    if (!files || files.length === 0) return;
    if (files.length > 1) {
      setError(new Error('Drop one file: a JSON or YAML API description.'));
      return;
    }
    void upload(files[0]!);
  }

  const stored = copilot.swagger_url && !/^https?:\/\//i.test(copilot.swagger_url);
  return (
    <section class="card" aria-labelledby="description-title">
      <h2 id="description-title">API description</h2>
      <p>
        Current:{' '}
        {copilot.swagger_url ? (
          <>
            {stored && originalName ? (
              <>
                <code class="clip" data-testid="original-file-name">
                  {originalName}
                </code>{' '}
                <span class="muted">
                  (uploaded; stored as <code class="clip">{copilot.swagger_url}</code>)
                </span>
              </>
            ) : (
              <>
                <code class="clip">{copilot.swagger_url}</code> {stored ? '(uploaded document)' : '(fetched from this URL)'}
              </>
            )}{' '}
            · <a href={href({ name: 'copilot', id: copilot.id, tab: 'report' })}>See the validation report</a>
          </>
        ) : (
          <span class="muted">none yet</span>
        )}
      </p>
      <div
        class={`dropzone${dragging ? ' dragging' : ''}`}
        hidden={readOnly}
        data-testid="dropzone"
        onDragEnter={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragOver={(e) => {
          e.preventDefault();
          if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
        }}
        onDragLeave={(e) => {
          if (!(e.currentTarget as HTMLElement).contains(e.relatedTarget as Node | null)) setDragging(false);
        }}
        onDrop={onDrop}
      >
        <p>Drop an OpenAPI 3 or Swagger 2.0 file here (.json, .yaml or .yml), or</p>
        <label class="button file-button">
          Choose a file…
          <input
            ref={input}
            type="file"
            class="visually-hidden"
            accept=".json,.yaml,.yml,application/json,application/yaml"
            disabled={busy !== null}
            onChange={(e) => {
              const file = (e.target as HTMLInputElement).files?.[0];
              if (file) void upload(file);
            }}
          />
        </label>
      </div>
      <form
        class="inline-form"
        hidden={readOnly}
        onSubmit={(e) => {
          e.preventDefault();
          void run('Saving the URL…', () => api.updateCopilot(copilot.id, { swagger_url: url.trim() }), 'The URL is saved; the report fetches it.');
        }}
      >
        <div class="field grow">
          <label for="description-url">Or the URL of the API description</label>
          <input
            id="description-url"
            type="url"
            placeholder="https://api.example.com/openapi.json"
            value={url}
            required
            onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
          />
        </div>
        <button type="submit" disabled={busy !== null}>
          Use this URL
        </button>
      </form>
      {busy && (
        <p class="loading" role="status">
          <span class="spinner" aria-hidden="true" />
          {busy}
        </p>
      )}
      <ErrorNotice error={error} />
      {done && (
        <SuccessNotice>
          {done} <a href={href({ name: 'copilot', id: copilot.id, tab: 'report' })}>Open the validation report</a>
        </SuccessNotice>
      )}
    </section>
  );
}

function DeleteCopilot({ copilot }: { copilot: Copilot }) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  async function confirm() {
    setBusy(true);
    setError(null);
    try {
      await api.deleteCopilot(copilot.id);
      flash.set(`Deleted “${copilot.name}”.`);
      navigate({ name: 'copilots' });
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }

  return (
    <section class="card danger-zone" aria-labelledby="delete-title">
      <h2 id="delete-title">Delete this copilot</h2>
      <p>It leaves the list; its validation report and knowledge base stop answering. The record is kept (soft delete).</p>
      <button type="button" class="danger" onClick={() => setOpen(true)}>
        Delete copilot…
      </button>
      <ConfirmDialog
        open={open}
        title={`Delete “${copilot.name}”?`}
        confirmLabel="Delete copilot"
        busy={busy}
        error={error}
        onCancel={() => {
          setOpen(false);
          setError(null);
        }}
        onConfirm={confirm}
      >
        <p>
          The copilot{' '}
          <strong>
            <bdi>{copilot.name}</bdi>
          </strong>{' '}
          (<code>{copilot.id}</code>) will no longer be listed, and its validation report and knowledge base will answer “not found”.
        </p>
      </ConfirmDialog>
    </section>
  );
}
