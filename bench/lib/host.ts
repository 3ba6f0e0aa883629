import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_DIST } from './paths.js';
import { createBenchDatabase } from './postgres.js';

/** The runner's handle on a service-host child process. */
export class ServiceHost {
  private next = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: { id: number; ok: boolean; result?: unknown; error?: string }) => {
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.ok) waiter.resolve(message.result);
      else waiter.reject(new Error(`service host: ${message.error}`));
    });
    child.on('exit', (code) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`service host exited (${code})`));
      this.pending.clear();
    });
  }

  /** `execArgv`: Node's own options for the host (`--cpu-prof …` profiles every thread of the service); this process's by default, as `fork` does. */
  static spawn(execArgv: string[] = process.execArgv): ServiceHost {
    const child = fork(path.join(BENCH_DIST, 'service-host.js'), [], {
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    return new ServiceHost(child);
  }

  call<T>(cmd: string, args: unknown = {}): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, cmd, args });
    });
  }

  /** Stops the service and waits for the process to end. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    try {
      await this.call('stop');
    } finally {
      this.child.disconnect();
      await exited;
    }
  }
}

/** A service host on a fresh database of the dialect (a throw-away PostgreSQL database, or a temporary SQLite DATA_DIR); closed and dropped after `work`. */
export async function withHost<T>(
  dialect: 'sqlite' | 'postgres',
  env: Record<string, string>,
  work: (host: ServiceHost, service: { url: string; key: string; dialect: string }) => Promise<T>,
  options: { execArgv?: string[] } = {},
): Promise<T> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cms-bench-'));
  const database = dialect === 'postgres' ? await createBenchDatabase() : null;
  const host = ServiceHost.spawn(options.execArgv);
  try {
    const service = await host.call<{ url: string; key: string; dialect: string }>('start', {
      env: { DATA_DIR: dataDir, ...(database && { DATABASE_URL: database.url }), ...env },
    });
    return await work(host, service);
  } finally {
    await host.close().catch(() => undefined);
    await database?.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}
