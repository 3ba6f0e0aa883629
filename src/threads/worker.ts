/** A task thread's program: runs one task per message and answers its value or its error. */
import { parentPort } from 'node:worker_threads';
import { encodeFailure, movableBuffers, tasks, type TaskFailure, type TaskName } from './tasks.js';

export interface TaskRequest {
  task: TaskName;
  args: unknown[];
}

export type TaskAnswer = { ok: true; value: unknown } | { ok: false; failure: TaskFailure };

const port = parentPort!;
port.on('message', ({ task, args }: TaskRequest) => {
  let answer: TaskAnswer;
  try {
    answer = { ok: true, value: (tasks[task] as (...a: unknown[]) => unknown)(...args) };
  } catch (err) {
    answer = { ok: false, failure: encodeFailure(err) };
  }
  try {
    // Bytes in buffers of their own (a validation's answer, packed passages) move to the caller, not copied.
    port.postMessage(answer, answer.ok ? movableBuffers(answer.value) : []);
  } catch (err) {
    // The value could not be sent (too large to copy): the task fails, the thread lives on.
    port.postMessage({ ok: false, failure: encodeFailure(err) } satisfies TaskAnswer);
  }
});
