import { createTaskThreads, type TaskThreads } from '../../src/threads/task-threads.js';
import { builtModule } from './built-sources.js';

/** The compiled thread program of the sources under test (global-setup.ts): what test task threads run. */
export const testWorkerScript = (): URL => builtModule('threads/worker.js');

/** Task threads running the build of the sources under test; the caller closes them. */
export function testTaskThreads(threads = 1): TaskThreads {
  return createTaskThreads({ threads, script: testWorkerScript() });
}
