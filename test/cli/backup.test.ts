/**
 * Issue 17 §4: `copilot-service backup --out FILE`, and the restore docs/deployment.md gives,
 * tried for real. A running service (the build of these sources, in process, a real port)
 * holds a copilot, its API description and a knowledge-base link with passages; the command
 * backs it up while the service runs and takes writes; the copy is restored as the docs say
 * (SQLite: the file becomes DATA_DIR/copilot-service.sqlite; PostgreSQL: pg_restore into a
 * new database); a service started on it answers the same data through the API.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { backupPostgres } from '../../src/storage/backup.js';
import { type DialectName, openStorage } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import type { RunningService } from '../../src/server.js';
import { startServer, type LocalServer } from '../net/local-server.js';
import { buildCli } from '../support/build.js';
import { builtModule } from '../support/built-sources.js';
import { createTestDatabase, createTestStorage, DIALECTS, type TestDatabase } from '../support/databases.js';
import { createThrowAwayDatabase } from '../support/postgres.js';

const { startService } = (await import(builtModule('server.js').href)) as typeof import('../../src/server.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: Record<string, string>, cwd?: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { env: { PATH: process.env.PATH ?? '', ...env }, cwd }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const which = (command: string): Promise<boolean> => run('/bin/sh', ['-c', `command -v ${command}`], {}).then((r) => r.code === 0);
const HAVE_PG_TOOLS = (await which('pg_dump')) && (await which('pg_restore'));
if (DIALECTS.includes('postgres') && !HAVE_PG_TOOLS) console.warn('pg_dump/pg_restore not installed: the PostgreSQL backup round trip is skipped.');

const ADMIN_KEY = `cms_Backup0Restore00_${'b4ckup'.repeat(5)}xy`;
const DOCUMENT = {
  openapi: '3.0.3',
  info: { title: 'Aurora tours', version: '1.0.0' },
  servers: [{ url: 'https://tours.example.com' }],
  paths: {
    '/tours': {
      get: { operationId: 'listTours', summary: 'List tours', description: 'Every tour on sale.', responses: { '200': { description: 'The tours' } } },
    },
  },
};
const PAGE = `<!doctype html><html><head><title>Aurora guide</title></head><body><main><h1>Aurora borealis tours</h1>
<p>Our aurora tours leave Tromsø at nine in the evening and return after midnight; guides bring warm suits and tripods.</p>
<p>Refunds for cancelled aurora tours are processed within five business days, to the card used for the booking.</p>
</main></body></html>`;

let cliPath: string;
let pages: LocalServer;
beforeAll(async () => {
  cliPath = await buildCli();
  pages = await startServer('127.0.0.1', (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
});
afterAll(async () => pages?.close());

function serviceOn(dataDir: string, databaseUrl: string | null): Promise<RunningService> {
  return startService(
    loadConfig({
      DATA_DIR: dataDir,
      ...(databaseUrl && { DATABASE_URL: databaseUrl }),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      FETCH_ALLOW_NETWORKS: '127.0.0.0/8,::1/128',
      KB_POLL_INTERVAL_MS: '50',
      ADMIN_API_KEY: ADMIN_KEY,
    }),
  );
}

async function api(service: RunningService, method: string, url: string, body?: unknown): Promise<{ status: number; text: string; json: any }> {
  const res = await fetch(`${service.address}${url}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : null };
}

/** What a client reads back of a copilot: the copilot, its document as stored, its links, a search, the copilot list, the keys. */
async function readBack(service: RunningService, id: string) {
  const get = async (url: string) => {
    const res = await api(service, 'GET', url);
    expect(res.status, `${url}: ${res.text}`).toBe(200);
    return res.json ?? res.text;
  };
  return {
    copilot: await get(`/backend/api/copilot/${id}`),
    document: await get(`/backend/api/copilot/${id}/swagger`),
    links: await get(`/backend/knowledgebase/b/${id}`),
    search: await get(`/backend/knowledgebase/b/${id}/search?q=refunds`),
    copilots: await get('/backend/api/copilots?q=Aurora'),
    keys: await get('/backend/api/keys'),
  };
}

for (const dialect of DIALECTS as DialectName[]) {
  describe.skipIf(dialect === 'postgres' && !HAVE_PG_TOOLS)(`copilot-service backup, then restore (${dialect})`, () => {
    let database: TestDatabase;
    let service: RunningService;
    let restored: RunningService | null = null;
    let scratch: string;
    let restoredDrop: (() => Promise<void>) | null = null;
    let id = '';
    let before: Awaited<ReturnType<typeof readBack>>;
    const env = () => ({ DATA_DIR: database.dataDir, ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }), LOG_LEVEL: 'silent' });

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      scratch = mkdtempSync(path.join(tmpdir(), 'cms-backup-'));
      service = await serviceOn(database.dataDir, database.databaseUrl);
      const created = await api(service, 'POST', '/backend/api/copilots', { name: 'Aurora helper' });
      expect(created.status, created.text).toBe(201);
      id = created.json.id;
      expect((await api(service, 'PUT', `/backend/api/copilot/${id}/swagger`, DOCUMENT)).status).toBe(200);
      expect((await api(service, 'POST', `/backend/knowledgebase/b/${id}`, { links: [`${pages.origin}/guide.html`] })).status).toBe(202);
      for (let waited = 0; (await api(service, 'GET', `/backend/knowledgebase/b/${id}`)).json.links[0]?.status !== 'indexed'; waited += 100) {
        if (waited > 30_000) throw new Error('The link was not indexed within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      before = await readBack(service, id);
      expect(before.links.links[0].passages).toBeGreaterThan(0);
      expect(before.search.results.length).toBeGreaterThan(0);
    }, 60_000);

    afterAll(async () => {
      await restored?.close();
      await service?.close();
      await restoredDrop?.();
      await database?.drop();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    it('backs up the running service while it takes writes: a new file, mode 0600, naming its schema', async () => {
      const out = path.join(scratch, dialect === 'sqlite' ? 'copilots.sqlite' : 'copilots.dump');
      // Writes keep coming while the backup runs.
      let writing = true;
      const writes = (async () => {
        for (let i = 0; writing; i++) expect((await api(service, 'POST', '/backend/api/copilots', { name: `During ${i}` })).status).toBe(201);
      })();
      const backup = await run(process.execPath, [cliPath, 'backup', '--out', out], env());
      writing = false;
      await writes;
      expect(backup.code, backup.stderr).toBe(0);
      expect(backup.stdout).toMatch(
        new RegExp(`^Backed up the ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} database.* to ${out}: \\d+ bytes, schema \\d{3}-[a-z-]+\\n$`),
      );
      expect(statSync(out).mode & 0o777).toBe(0o600);
    }, 60_000);

    it('refuses to write over an existing file, and says so (exit 2, as every failure)', async () => {
      const existing = path.join(scratch, 'existing');
      writeFileSync(existing, 'keep me');
      const again = await run(process.execPath, [cliPath, 'backup', '--out', existing], env());
      expect(again.code).toBe(2);
      expect(again.stderr).toContain(`${existing} already exists`);
      expect(statSync(existing).size).toBe('keep me'.length);
      const usage = await run(process.execPath, [cliPath, 'backup'], env());
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain('--out');
      // `--out -` is not standard output: it was a file named "-" in the working directory (operator sweep).
      const dash = await run(process.execPath, [cliPath, 'backup', '--out', '-'], env(), scratch);
      expect(dash.code).toBe(2);
      expect(dash.stderr).toContain('standard output');
      expect(existsSync(path.join(scratch, '-'))).toBe(false);
      if (dialect === 'sqlite') {
        const empty = mkdtempSync(path.join(scratch, 'empty-'));
        const none = await run(process.execPath, [cliPath, 'backup', '--out', path.join(scratch, 'none.sqlite')], { DATA_DIR: empty });
        expect(none.code).toBe(2);
        expect(none.stderr).toContain(`There is no SQLite database at ${path.join(empty, 'copilot-service.sqlite')}`);
        expect(existsSync(path.join(scratch, 'none.sqlite'))).toBe(false);
      }
    });

    it('restores into a fresh database: a service started on it answers the same data', async () => {
      const out = path.join(scratch, dialect === 'sqlite' ? 'copilots.sqlite' : 'copilots.dump');
      const dataDir = path.join(scratch, 'restored-data');
      let databaseUrl: string | null = null;
      if (dialect === 'sqlite') {
        // docs/deployment.md: the copy becomes DATA_DIR/copilot-service.sqlite (the service stopped, no -wal or -shm beside it).
        mkdirSync(dataDir, { mode: 0o700 });
        copyFileSync(out, path.join(dataDir, 'copilot-service.sqlite'));
      } else {
        const target = await createThrowAwayDatabase(`cms_restore_${process.pid}_${Math.random().toString(36).slice(2, 8)}`);
        restoredDrop = target.drop;
        databaseUrl = target.url;
        const restore = await run('pg_restore', ['--no-owner', '--exit-on-error', '--dbname', target.url, out], {});
        expect(restore.code, restore.stderr).toBe(0);
      }
      restored = await serviceOn(dataDir, databaseUrl);
      const after = await readBack(restored, id);
      expect(after.copilot).toEqual(before.copilot);
      expect(after.document).toEqual(before.document);
      expect(after.links).toEqual(before.links);
      expect(after.search).toEqual(before.search);
      expect(after.keys).toEqual(before.keys);
      // Everything written before the backup began is there (of the writes during it: some, all or none).
      expect(after.copilots).toEqual(before.copilots);
      // The key came back with the database: no new first key was made.
      expect(existsSync(path.join(dataDir, 'bootstrap-admin-key'))).toBe(false);
    }, 60_000);
  });
}

for (const dialect of DIALECTS as DialectName[]) {
  describe(`migrations only go forward (${dialect})`, () => {
    it('a service older than its database refuses to start it, saying what to do', async () => {
      const { storage, cleanup } = await createTestStorage(dialect);
      try {
        await sql`insert into kysely_migration (name, timestamp) values ('999-from-a-newer-version', '2030-01-01T00:00:00.000Z')`.execute(storage.db);
        await expect(migrateToLatest(storage)).rejects.toThrow(
          /schema is newer than this version of the service: it holds migration 999-from-a-newer-version.*restore the backup taken before that upgrade/,
        );
      } finally {
        await cleanup();
      }
    });
  });
}

describe.skipIf(!DIALECTS.includes('postgres'))('backup on PostgreSQL: how pg_dump is run', () => {
  it('without a shell, the password in PGPASSWORD and never in its arguments; a failure leaves no file', async () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'cms-pgdump-'));
    const database = await createTestDatabase('postgres');
    try {
      const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1 });
      await migrateToLatest(storage);
      await storage.close();
      // The server trusts local connections: a password is accepted and ignored.
      const url = new URL(database.databaseUrl!);
      url.password = 's3cret;$(touch pwned)';
      // A stand-in for pg_dump that writes down what it was given.
      const fake = path.join(scratch, 'pg_dump');
      writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$@" > "${scratch}/argv"\nprintf '%s' "$PGPASSWORD" > "${scratch}/password"\necho dump > "$3"\n`, {
        mode: 0o755,
      });
      const result = await backupPostgres(url.href, path.join(scratch, 'out.dump'), fake);
      expect(result.schema).toMatch(/^\d{3}-/);
      const argv = readFileSync(path.join(scratch, 'argv'), 'utf8').trim().split('\n');
      // Written under a partial name beside it, and named out.dump once whole.
      expect(argv.slice(0, 3)).toEqual(['--format=custom', '--file', path.join(scratch, `.out.dump.partial-${process.pid}`)]);
      expect(readFileSync(path.join(scratch, 'out.dump'), 'utf8')).toBe('dump\n');
      expect(argv.join(' ')).not.toContain('s3cret');
      expect(new URL(argv[4]!).password).toBe('');
      expect(readFileSync(path.join(scratch, 'password'), 'utf8')).toBe('s3cret;$(touch pwned)');
      // A password given as the URL's option goes the same way (operator sweep: it stayed in --dbname).
      const optioned = new URL(database.databaseUrl!);
      optioned.searchParams.set('password', 'opt-s3cret');
      await backupPostgres(optioned.href, path.join(scratch, 'optioned.dump'), fake);
      expect(readFileSync(path.join(scratch, 'argv'), 'utf8')).not.toContain('opt-s3cret');
      expect(readFileSync(path.join(scratch, 'password'), 'utf8')).toBe('opt-s3cret');
      // The other options reach pg_dump as written: libpq reads no "+" as a space (pgenv sweep:
      // "-c search_path=…" became "-c+search_path=…", which pg_dump's server refused).
      const withOptions = `${database.databaseUrl!}?options=-c%20search_path%3Dpublic&password=opt-s3cret&application_name=a%2Bb`;
      await backupPostgres(withOptions, path.join(scratch, 'options.dump'), fake);
      const dbname = new URL(readFileSync(path.join(scratch, 'argv'), 'utf8').trim().split('\n')[4]!);
      expect(dbname.search).toBe('?options=-c%20search_path%3Dpublic&application_name=a%2Bb');
      // A directory that does not exist is said in words, not as ENOENT.
      await expect(backupPostgres(url.href, path.join(scratch, 'no-such-dir', 'x.dump'), fake)).rejects.toThrow(/the directory .*no-such-dir does not exist/);
      expect(existsSync(path.join(process.cwd(), 'pwned'))).toBe(false);

      writeFileSync(fake, '#!/bin/sh\necho "pg_dump: error: server version mismatch" >&2\nexit 1\n', { mode: 0o755 });
      await expect(backupPostgres(url.href, path.join(scratch, 'failed.dump'), fake)).rejects.toThrow(
        'pg_dump failed: pg_dump: error: server version mismatch',
      );
      expect(existsSync(path.join(scratch, 'failed.dump'))).toBe(false);
      await expect(backupPostgres(url.href, path.join(scratch, 'missing.dump'), path.join(scratch, 'no-such-pg_dump'))).rejects.toThrow(/is not installed/);

      // A run that is stopped half-way leaves nothing under the name asked for (crash sweep: a
      // killed backup left a partial dump there, and the next run refused the name); the next
      // run removes what a dead run left beside it, and publishes.
      writeFileSync(fake, '#!/bin/sh\necho half > "$3"\nkill -9 $$\n', { mode: 0o755 });
      await expect(backupPostgres(url.href, path.join(scratch, 'killed.dump'), fake)).rejects.toThrow(/pg_dump failed/);
      expect(existsSync(path.join(scratch, 'killed.dump'))).toBe(false);
      const dead = path.join(scratch, '.killed.dump.partial-2147483646');
      writeFileSync(dead, 'left by a killed run');
      writeFileSync(fake, '#!/bin/sh\necho whole > "$3"\n', { mode: 0o755 });
      await backupPostgres(url.href, path.join(scratch, 'killed.dump'), fake);
      expect(readFileSync(path.join(scratch, 'killed.dump'), 'utf8')).toBe('whole\n');
      expect(readdirSync(scratch).filter((name) => name.includes('partial'))).toEqual([]);
      await expect(backupPostgres(url.href, path.join(scratch, 'killed.dump'), fake)).rejects.toThrow(/already exists/);
    } finally {
      await database.drop();
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
