import { writeSync } from 'node:fs';

/**
 * The commands' standard output, written to file descriptor 1 with `writeSync` rather than
 * through `process.stdout`. Creating that stream loads Node's stream modules, about a tenth
 * of a small document's `validate` (bench/README.md), and its write copies a long answer
 * into a Buffer before writing it.
 *
 * - A partial write (a pipe whose reader is behind) goes on with the bytes left.
 * - A descriptor that would block (EAGAIN: a non-blocking pipe, full) hands the rest, and
 *   everything written after it, to `process.stdout`, which waits for the reader; the process
 *   ends once the stream has written it.
 * - Once the reader has stopped (EPIPE: `| head`), the rest is dropped quietly: the run goes on
 *   to its end and its exit code, as when the answer is read whole.
 */
export interface Output {
  /**
   * Text is encoded once here; bytes are written as they are. False once the reader has
   * stopped (the data was dropped); an error other than EPIPE or EAGAIN (ENOSPC: a full disk) is thrown.
   */
  write(data: string | Uint8Array): boolean;
}

interface OutputParts {
  /** `fs.writeSync(fd, data)`: the bytes written, or throws (EAGAIN, EPIPE, …). */
  writeSync: (data: string | Uint8Array) => number;
  /** The stream the rest goes to once the descriptor would block. */
  stream: () => { write(data: string | Uint8Array): unknown; on(event: 'error', listener: (err: NodeJS.ErrnoException) => void): unknown };
  /** Any failure to write ends the output as EPIPE does, never thrown (standard error: a complaint with nowhere to go is dropped). */
  neverThrows?: boolean;
}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code;

export function createOutput(parts: OutputParts): Output {
  let stream: ReturnType<OutputParts['stream']> | null = null;
  let readerGone = false;
  const toStream = (data: string | Uint8Array) => {
    if (stream === null) {
      stream = parts.stream();
      // After EPIPE, a write the stream had queued fails as destroyed: the same end.
      stream.on('error', (err) => {
        if (err.code !== 'EPIPE' && !readerGone && !parts.neverThrows) throw err;
        readerGone = true;
      });
    }
    stream.write(data);
  };
  return {
    write(data) {
      if (readerGone) return false;
      if (data.length === 0) return true;
      if (stream !== null) {
        toStream(data);
        return true;
      }
      // Encoded once here (a string written would be encoded by the write, and its length in
      // bytes counted again to tell a partial write).
      let rest: Uint8Array = typeof data === 'string' ? Buffer.from(data) : data;
      try {
        while (rest.length > 0) rest = rest.subarray(parts.writeSync(rest));
      } catch (err) {
        if (codeOf(err) === 'EAGAIN') toStream(rest);
        else if (codeOf(err) === 'EPIPE' || parts.neverThrows) readerGone = true;
        else throw err;
      }
      return !readerGone;
    },
  };
}

/** The output of descriptor `fd`, its stream once the descriptor would block. */
const descriptor = (fd: 1 | 2, stream: () => NodeJS.WriteStream, neverThrows = false): Output =>
  createOutput({ writeSync: (data) => (typeof data === 'string' ? writeSync(fd, data) : writeSync(fd, data)), stream, neverThrows });

/** Standard output for the commands' results, the help and the version. */
export const stdout: Output = descriptor(1, () => process.stdout);

/** Standard error for the commands' complaints: a closed one changes neither the run nor its exit code. */
export const stderr: Output = descriptor(2, () => process.stderr, true);
