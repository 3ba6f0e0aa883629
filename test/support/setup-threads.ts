import { inject } from 'vitest';
import { taskThreads } from '../../src/threads/task-threads.js';

// Each test file's task threads run the build of the sources under test (global-setup.ts).
taskThreads.configure({ script: new URL(inject('taskWorker')) });
