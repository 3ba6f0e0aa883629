/**
 * The task threads' program: piscina loads it on each thread and calls the default export
 * once per task. It never throws: a task's failure is answered as a value, because the
 * structured clone piscina sends errors with drops the `code` and `details` the callers need.
 *
 * A task that leaves much garbage on its thread's heap (a large document's parse: about 750 MiB
 * for 25 MiB of empty arrays) has it collected before its answer is sent. V8 collects a heap when
 * it next allocates, and an idle thread allocates nothing: each thread kept the garbage of its
 * largest task until its next one, so the service's memory grew to that peak times the threads
 * and stayed there (bench section 2, the service's memory). Before the answer, since nothing
 * runs on an idle thread: a few tens of milliseconds more for a task that took seconds.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { encodeFailure, movableBuffers, tasks, type TaskFailure, type TaskName } from './tasks.js';

/** Heap in use after a task past which the thread collects its garbage (a full collection). */
const COLLECT_ABOVE_BYTES = 64 * 1024 * 1024;

// V8's `gc`, exposed to a context made for it (the flag takes effect for contexts created after it).
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

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
  // Before the answer is sent: piscina's thread waits for its next task blocked (Atomics.wait),
  // so nothing scheduled for later would run while it is idle.
  if (getHeapStatistics().used_heap_size > COLLECT_ABOVE_BYTES) collectGarbage();
  // Bytes in buffers of their own (a validation's answer, packed passages) move to the caller, not copied.
  const buffers = answer.ok ? movableBuffers(answer.value) : [];
  if (buffers.length === 0) return answer;
  const movable = { [transferableSymbol]: buffers, [valueSymbol]: answer };
  return move(movable as Parameters<typeof move>[0]);
}
