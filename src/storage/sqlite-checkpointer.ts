import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What one checkpoint did, in WAL frames (SQLite's `wal_checkpoint` answer). */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

export interface Checkpointer {
  /** Runs a checkpoint now (in the worker) and answers what it did. */
  runNow(): Promise<CheckpointResult>;
  /** Stops the worker (the same promise to every caller). */
  stop(): Promise<void>;
}

export const CHECKPOINT_INTERVAL_MS = 250;

// The worker's whole program: its own connection to the file, a PASSIVE checkpoint every
// interval and on request. PASSIVE never waits for a lock and never blocks readers or the
// writer. A failed checkpoint is tried again at the next interval (and reported to a
// request). A string (not a file) so that it runs the same from the sources, the compiled
// build and the bundled CLI.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file, { fileMustExist: true });
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)')[0];
const timer = setInterval(() => { try { checkpoint(); } catch {} }, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message.type === 'checkpoint') {
    try {
      parentPort.postMessage({ id: message.id, result: checkpoint() });
    } catch (err) {
      parentPort.postMessage({ id: message.id, error: String(err && err.message || err) });
    }
  } else if (message.type === 'stop') {
    clearInterval(timer);
    db.close();
    parentPort.close();
  }
});
`;

/**
 * Moves SQLite's WAL checkpoints off the event loop. By default the connection that
 * commits copies the WAL back into the database file when the WAL has grown past 1000
 * pages, synchronously: after a large transaction (deleting 100,000 passages) the event
 * loop is blocked for tens of milliseconds. SQLite's documentation suggests turning automatic
 * checkpoints off and running them from another thread; this is that thread.
 *
 * The caller turns automatic checkpoints off on its writer only once this has started,
 * and back on (`onFailure`) if the worker ever stops on its own, so the WAL never grows
 * without bound.
 */
export function startCheckpointer(file: string, onFailure: (error: unknown) => void): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, intervalMs: CHECKPOINT_INTERVAL_MS } });
  worker.unref();
  const pending = new Map<number, { resolve: (r: CheckpointResult) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let stopping: Promise<void> | null = null;
  let ended: Error | null = null;
  const end = (error: Error) => {
    if (ended) return;
    ended = error;
    for (const request of pending.values()) request.reject(error);
    pending.clear();
    if (!stopping) onFailure(error);
  };
  worker.on('message', (message: { id: number; result?: CheckpointResult; error?: string }) => {
    const request = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) request?.reject(new Error(message.error));
    else request?.resolve(message.result!);
  });
  worker.on('error', (error) => end(error));
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', (code) => {
      end(new Error(`the checkpoint worker exited with code ${code}`));
      resolve();
    }),
  );
  return {
    runNow: () =>
      new Promise<CheckpointResult>((resolve, reject) => {
        if (ended || stopping) return reject(ended ?? new Error('the checkpoint worker is stopping'));
        const id = nextId++;
        pending.set(id, { resolve, reject });
        worker.postMessage({ type: 'checkpoint', id });
      }),
    stop() {
      if (!stopping) {
        if (!ended) worker.postMessage({ type: 'stop' });
        stopping = exited;
      }
      return stopping;
    },
  };
}
