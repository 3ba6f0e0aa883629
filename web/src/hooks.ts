import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again; `quiet` keeps the current data on screen without a loading state. */
  reload(quiet?: boolean): void;
  /** Replaces the data (after a write answered with the new state). */
  set(data: T): void;
}

/** Runs `load` whenever `deps` change, cancelling the previous run; keeps the last data while reloading. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState({ n: 0, quiet: false });
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const controller = new AbortController();
    if (!tick.quiet) setState((s) => ({ ...s, loading: true, error: null }));
    loadRef.current(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, error: null, loading: false });
      },
      (error: unknown) => {
        if (!controller.signal.aborted) setState((s) => ({ ...s, error, loading: false }));
      },
    );
    return () => controller.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);

  const reload = useCallback((quiet = false) => setTick((t) => ({ n: t.n + 1, quiet })), []);
  const set = useCallback((data: T) => setState({ data, error: null, loading: false }), []);
  return { ...state, reload, set };
}

/** The value, once it has stopped changing for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** The dashboard's name, last in every document title. */
export const APP_TITLE = 'Copilot Management';

/** Names the screen in the document title ("Keys · Copilot Management"): the browser's tab and history, and what a screen reader says on arrival. */
export function useDocumentTitle(screen: string): void {
  useEffect(() => {
    document.title = `${screen} · ${APP_TITLE}`;
  }, [screen]);
}
