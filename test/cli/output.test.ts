import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createOutput } from '../../src/cli/output.js';

const errno = (code: string) => Object.assign(new Error(code), { code });

/** A fake descriptor: takes at most `chunk` bytes a call, and throws `fail` once it took `failAfter`. */
function fakeDescriptor(opts: { chunk?: number; failAfter?: number; fail?: string } = {}) {
  const taken: Buffer[] = [];
  let total = 0;
  let calls = 0;
  const writeSync = (data: string | Uint8Array) => {
    calls++;
    if (opts.failAfter !== undefined && total >= opts.failAfter) throw errno(opts.fail!);
    const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
    const n = Math.min(bytes.length, opts.chunk ?? bytes.length, opts.failAfter === undefined ? bytes.length : opts.failAfter - total);
    taken.push(bytes.subarray(0, n));
    total += n;
    return n;
  };
  return { writeSync, taken: () => Buffer.concat(taken), calls: () => calls };
}

function fakeStream() {
  const written: Buffer[] = [];
  let onError: ((err: NodeJS.ErrnoException) => void) | null = null;
  return {
    write: (data: string | Uint8Array) => written.push(Buffer.from(data)),
    on: (_event: 'error', listener: (err: NodeJS.ErrnoException) => void) => {
      onError = listener;
    },
    written: () => Buffer.concat(written),
    fail: (code: string) => onError?.(errno(code)),
  };
}

// Characters of one to four UTF-8 bytes: a cut between a character's bytes must not lose any.
const text = 'ascii é € 😀 '.repeat(500);

describe('the CLI output (src/cli/output.ts)', () => {
  it('writes a text whole in one call when the descriptor takes it', () => {
    const fd = fakeDescriptor();
    createOutput({ writeSync: fd.writeSync, stream: () => fakeStream() }).write(text);
    expect(fd.taken().toString()).toBe(text);
    expect(fd.calls()).toBe(1);
  });

  it('writes bytes as they are (no copy), after partial writes from the byte where each stopped', () => {
    const bytes = Buffer.from(text);
    const whole = fakeDescriptor();
    const seen: unknown[] = [];
    const writeSync = (data: string | Uint8Array) => {
      seen.push(data);
      return whole.writeSync(data);
    };
    createOutput({ writeSync, stream: () => fakeStream() }).write(bytes);
    expect(seen).toEqual([bytes]);
    expect(seen[0]).toBe(bytes);
    for (const chunk of [1, 3, 4096]) {
      const fd = fakeDescriptor({ chunk });
      const out = createOutput({ writeSync: fd.writeSync, stream: () => fakeStream() });
      out.write(bytes);
      out.write(new Uint8Array(Buffer.from('and after.\n')));
      expect(fd.taken().toString()).toBe(`${text}and after.\n`);
    }
  });

  it('goes on after partial writes, from the byte where each stopped, inside characters too', () => {
    for (const chunk of [1, 2, 3, 5, 4096]) {
      const fd = fakeDescriptor({ chunk });
      const out = createOutput({ writeSync: fd.writeSync, stream: () => fakeStream() });
      out.write(text);
      out.write('and after.\n');
      expect(fd.taken().toString()).toBe(`${text}and after.\n`);
    }
  });

  it('hands the rest, and every later write, to the stream once the descriptor would block (EAGAIN)', () => {
    for (const failAfter of [0, 1, 700, 4097]) {
      const fd = fakeDescriptor({ chunk: 1000, failAfter, fail: 'EAGAIN' });
      const stream = fakeStream();
      let streams = 0;
      const out = createOutput({
        writeSync: fd.writeSync,
        stream: () => {
          streams++;
          return stream;
        },
      });
      out.write(text);
      out.write('second\n');
      out.write('third\n');
      expect(Buffer.concat([fd.taken(), stream.written()]).toString()).toBe(`${text}second\nthird\n`);
      expect(streams).toBe(1);
    }
  });

  it('drops the rest quietly once the reader has gone (EPIPE), written directly or through the stream', () => {
    const fd = fakeDescriptor({ chunk: 100, failAfter: 300, fail: 'EPIPE' });
    const out = createOutput({ writeSync: fd.writeSync, stream: () => fakeStream() });
    out.write(text);
    const calls = fd.calls();
    out.write('more');
    expect(fd.calls()).toBe(calls);
    expect(fd.taken().toString()).toBe(Buffer.from(text).subarray(0, 300).toString());

    const stream = fakeStream();
    const viaStream = createOutput({ writeSync: fakeDescriptor({ failAfter: 0, fail: 'EAGAIN' }).writeSync, stream: () => stream });
    viaStream.write('first');
    stream.fail('EPIPE');
    viaStream.write('second');
    expect(stream.written().toString()).toBe('first');

    // Any other error of the stream is thrown.
    const other = fakeStream();
    createOutput({ writeSync: fakeDescriptor({ failAfter: 0, fail: 'EAGAIN' }).writeSync, stream: () => other }).write('first');
    expect(() => other.fail('EIO')).toThrow('EIO');
  });

  it('throws any other error of the descriptor', () => {
    const fd = fakeDescriptor({ failAfter: 10, fail: 'EBADF' });
    const out = createOutput({ writeSync: fd.writeSync, stream: () => fakeStream() });
    expect(() => out.write(text)).toThrow('EBADF');
  });
});

describe('copilot-service validate writing its answer', () => {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const bin = `${root}dist/cli/copilot-service.cjs`;
  const slack = `${root}test/fixtures/specs/slack.json`;

  it('writes a long answer whole to a pipe whose reader is slow', async () => {
    const expected = spawnSync(process.execPath, [bin, 'validate', slack], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(expected.stdout.length).toBeGreaterThan(256 * 1024); // several times a pipe's buffer
    const child = spawn(process.execPath, [bin, 'validate', slack], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // A slow reader: each chunk read, then a pause before the next.
    child.stdout.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 3);
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(await exited).toBe(expected.status);
    expect(stderr).toBe('');
    expect(Buffer.concat(chunks).toString('utf8')).toBe(expected.stdout);
  });

  it('ends quietly with the exit code of its findings when the reader stops early (| head -c 100)', () => {
    const piped = spawnSync(
      'bash',
      ['-c', `set -o pipefail; "${process.execPath}" "${bin}" validate "${slack}" | head -c 100 >/dev/null; echo "\${PIPESTATUS[0]}"`],
      {
        encoding: 'utf8',
      },
    );
    expect(piped.stderr).toBe('');
    // Slack's description has findings: 1, as when the answer is read whole.
    expect(piped.stdout.trim()).toBe('1');
  });
});
