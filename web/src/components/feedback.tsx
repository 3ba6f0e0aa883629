import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { ApiError } from '../api';
import { formatBytes } from '../lib/format';

/** The limit a 413 names (`details.max_bytes`), if it names one. */
function sizeLimit(error: ApiError): number | null {
  const details = error.details as { max_bytes?: unknown } | undefined;
  return typeof details?.max_bytes === 'number' && details.max_bytes > 0 ? details.max_bytes : null;
}

/** The one sentence a person should read for an error: the API's `message`, or the error's own. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError && error.status === 413) {
    // Say the limit in words a person reads (the API gives it in bytes), or say that it was not given.
    const limit = sizeLimit(error);
    return limit !== null
      ? `Too large: the service accepts at most ${formatBytes(limit)} here (${limit.toLocaleString('en')} bytes).`
      : 'Too large: the service, or a proxy in front of it, refused the size of this request without saying its limit.';
  }
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error && error.message) return error.message;
  return 'Something went wrong.';
}

/** A mistake in one field of a form, found before sending: `field` is the name the API gives it (e.g. `name`). */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The fields an error is about: a FieldError's, or the top-level body fields an API `invalid_request` names. */
export function fieldsInError(error: unknown): ReadonlySet<string> {
  if (error instanceof FieldError) return new Set([error.field]);
  if (!(error instanceof ApiError) || !Array.isArray(error.details)) return new Set();
  return new Set(
    (error.details as Array<{ location?: unknown; path?: unknown }>)
      .filter((d) => d.location === 'body' && typeof d.path === 'string')
      .map((d) => String(d.path).split('/')[1] ?? '')
      .filter((f) => f !== ''),
  );
}

/**
 * A field's ARIA state for a form's error: aria-invalid, and aria-describedby naming the error
 * notice (`errorId`) after the field's own description (`describedBy`), when `invalid`.
 */
export function fieldErrorProps(invalid: boolean, errorId: string, describedBy?: string): { 'aria-invalid'?: 'true'; 'aria-describedby'?: string } {
  const ids = [describedBy, invalid ? errorId : undefined].filter(Boolean).join(' ');
  return { ...(invalid && { 'aria-invalid': 'true' as const }), ...(ids && { 'aria-describedby': ids }) };
}

/** An error, shown as its message (never a blank screen); `id` lets a field in error point at it. */
export function ErrorNotice({ error, id, children }: { error: unknown; id?: string; children?: ComponentChildren }) {
  if (!error) return null;
  return (
    <div class="notice notice-error" role="alert" id={id}>
      <p>{errorMessage(error)}</p>
      {children}
    </div>
  );
}

/**
 * What an action did. With `focusKey`, the notice takes the focus whenever that value changes
 * (an action whose button went away: the focus would drop to the page's body).
 */
export function SuccessNotice({ children, focusKey }: { children: ComponentChildren; focusKey?: unknown }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (focusKey === undefined || focusKey === null) return;
    // A task later: a confirmation <dialog> closing in the same render gives the focus back to its opener first.
    const timer = setTimeout(() => ref.current?.focus());
    return () => clearTimeout(timer);
  }, [focusKey]);
  return (
    <div class="notice notice-ok" role="status" ref={ref} tabIndex={focusKey === undefined ? undefined : -1}>
      {children}
    </div>
  );
}

/**
 * A polite live region that is always in the page, saying `text` (a region inserted together
 * with its text is often not read out). Visually hidden: what it says is shown elsewhere.
 */
export function Announcer({ text }: { text: string }) {
  return (
    <p class="visually-hidden" role="status" aria-live="polite" aria-atomic="true">
      {text}
    </p>
  );
}

export function Loading({ label }: { label: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

export function MethodBadge({ method }: { method: string }) {
  const m = (method || '?').toUpperCase();
  return <span class={`method method-${m.toLowerCase()}`}>{m}</span>;
}

export function StatusBadge({ status, label }: { status: string; label?: string }) {
  return <span class={`badge badge-${status}`}>{label ?? status}</span>;
}
