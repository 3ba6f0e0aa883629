import { taskThreads } from '../../src/threads/task-threads.js';
import { builtModule } from './built-sources.js';

// Each test file's task threads run the build of the sources under test (global-setup.ts).
taskThreads.configure({ script: builtModule('threads/worker.js') });
