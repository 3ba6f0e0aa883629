import type { DocumentSource } from '../../src/domain/validator/index.js';
import { createTaskThreads, type TaskThreads } from '../../src/threads/task-threads.js';
import { builtModule } from './built-sources.js';

/** The compiled thread program of the sources under test (global-setup.ts): what test task threads run. */
export const testWorkerScript = (): URL => builtModule('threads/worker.js');

/** Task threads running the build of the sources under test; the caller closes them. */
export function testTaskThreads(threads = 1): TaskThreads {
  return createTaskThreads({ threads, script: testWorkerScript() });
}

/**
 * A task that holds its thread until `release()`, for a thread program that blocks on a
 * SharedArrayBuffer given as the first argument (raising its flag first, then waiting until the
 * flag is lowered); `tenant`: the copilot whose turn it takes. `started()`: a thread runs it.
 */
export function holdingTask(pool: TaskThreads, tenant?: string) {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const done = pool.run('validate', [flag.buffer as unknown as DocumentSource, {}], { tenant }).then(
    (value) => value,
    (err: unknown) => err,
  );
  return {
    done,
    started: () => Atomics.load(flag, 0) !== 0,
    release: () => {
      Atomics.store(flag, 0, 2);
      Atomics.notify(flag, 0);
    },
  };
}
