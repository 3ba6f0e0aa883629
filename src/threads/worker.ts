/**
 * The task threads' program: piscina loads it on each thread and calls the default export
 * once per task. It never throws: a task's failure is answered as a value, because the
 * structured clone piscina sends errors with drops the `code` and `details` the callers need.
 */
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { encodeFailure, movableBuffers, tasks, type TaskFailure, type TaskName } from './tasks.js';

export interface TaskRequest {
  task: TaskName;
  args: unknown[];
}

export type TaskAnswer = { ok: true; value: unknown } | { ok: false; failure: TaskFailure };

export default function runTask({ task, args }: TaskRequest): unknown {
  let answer: TaskAnswer;
  try {
    answer = { ok: true, value: (tasks[task] as (...a: unknown[]) => unknown)(...args) };
  } catch (err) {
    answer = { ok: false, failure: encodeFailure(err) };
  }
  // Bytes in buffers of their own (a validation's answer, packed passages) move to the caller, not copied.
  const buffers = answer.ok ? movableBuffers(answer.value) : [];
  if (buffers.length === 0) return answer;
  const movable = { [transferableSymbol]: buffers, [valueSymbol]: answer };
  return move(movable as Parameters<typeof move>[0]);
}
