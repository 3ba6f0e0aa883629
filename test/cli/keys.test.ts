import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { authenticate, listApiKeys, readKeys } from '../../src/domain/auth/api-keys.js';
import { createCopilot } from '../../src/domain/copilots/copilot.service.js';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { buildCli } from '../support/build.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { API_KEY } from '../support/http.js';
import { seedIndexedLinks } from '../support/seed.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let cliPath: string;
beforeAll(async () => {
  cliPath = await buildCli();
});

function run(args: string[], env: Record<string, string>, cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The command with its standard output on a full disk (/dev/full), or on a pipe whose reader has gone. */
function runWithBrokenStdout(args: string[], env: Record<string, string>, cwd: string, broken: 'full' | 'closed'): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const full = broken === 'full' ? openSync('/dev/full', 'w') : null;
    const child = spawn(process.execPath, [cliPath, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', full ?? 'pipe', 'pipe'],
    });
    child.stdout?.destroy();
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => {
      if (full !== null) closeSync(full);
      resolve({ code: code ?? -1, stderr });
    });
  });
}

const KEY_ALONE = new RegExp(`^${API_KEY.source.slice(1, -1)}\\n$`);

// The dialects run side by side (each on its own database); the steps within one run in order.
for (const dialect of DIALECTS) {
  describe.concurrent(`copilot-service keys (${dialect})`, () => {
    let database: TestDatabase;
    let storage: Storage;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
    });
    afterAll(async () => {
      await storage?.close();
      await database.drop();
    });

    const cli = (...args: string[]) =>
      run(args, { DATA_DIR: database.dataDir, ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }) }, database.dataDir);
    /** The same database, opened in-process (after the CLI has migrated it). */
    const db = () => (storage ??= openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 1 }));

    let bot = '';
    let key = '';
    let id = '';

    it.sequential('create prints the new key alone on stdout, valid at once', async () => {
      expect((await cli('migrate')).code).toBe(0);
      bot = (await createCopilot(db().db, { name: 'CLI bot' })).id;
      const result = await cli('keys', 'create', '--scopes', 'copilots:read', '--bots', bot, '--name', 'x');
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(KEY_ALONE);
      key = result.stdout.trim();
      id = key.split('_')[1]!;
      expect(result.stderr).not.toContain(key);
      const principal = await authenticate(`Bearer ${key}`, readKeys(db().readDb));
      expect(principal).toMatchObject({ kind: 'key', keyId: id, bots: [bot] });
      expect(principal.kind === 'key' && [...principal.scopes]).toEqual(['copilots:read']);
    });

    it.sequential('--scopes and --bots given several times hold them all (operator sweep: the last was kept, silently)', async () => {
      const other = (await createCopilot(db().db, { name: 'CLI bot 2' })).id;
      const result = await cli('keys', 'create', '--scopes', 'copilots:read', '--scopes', 'knowledgebase:read', '--bots', bot, '--bots', other);
      expect(result.code, result.stderr).toBe(0);
      const principal = await authenticate(`Bearer ${result.stdout.trim()}`, readKeys(db().readDb));
      expect(principal.kind === 'key' && [...principal.scopes].sort()).toEqual(['copilots:read', 'knowledgebase:read']);
      expect(principal.kind === 'key' && [...(principal.bots ?? [])].sort()).toEqual([bot, other].sort());
      // Gone again: the steps after count the keys.
      await db().db.deleteFrom('api_keys').where('id', '=', result.stdout.trim().split('_')[1]!).execute();
    });

    it.sequential('list shows the key without its secret', async () => {
      const [table, asJson] = await Promise.all([cli('keys', 'list'), cli('keys', 'list', '--json')]);
      expect(table.code, table.stderr).toBe(0);
      const row = table.stdout.split('\n').find((l) => l.startsWith(id));
      expect(row).toBeDefined();
      expect(row!.split(/\s+/)).toEqual([id, 'active', 'copilots:read', bot, 'x', expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/)]);
      expect(asJson.code, asJson.stderr).toBe(0);
      const entry = (JSON.parse(asJson.stdout) as Array<Record<string, unknown>>).find((k) => k.id === id);
      expect(entry).toEqual({ id, name: 'x', scopes: ['copilots:read'], bots: [bot], created_at: expect.any(String), revoked_at: null });
      for (const out of [table.stdout, asJson.stdout]) {
        expect(out).not.toContain(key);
        expect(out).not.toContain(key.split('_')[2]);
        expect(out).not.toMatch(/secret|hash/i);
      }
    });

    it.sequential('list names up to three bots a row and counts the rest: a key of many bots no longer widens every row to its list (scale sweep: 3,142 keys made 116 MB)', async () => {
      const bots: string[] = [];
      for (let i = 0; i < 12; i++) bots.push((await createCopilot(db().db, { name: `Many ${i}` })).id);
      const made = await cli('keys', 'create', '--scopes', 'copilots:read', '--bots', bots.join(','), '--name', 'many');
      expect(made.code, made.stderr).toBe(0);
      const manyId = made.stdout.trim().split('_')[1]!;
      const table = await cli('keys', 'list');
      const lines = table.stdout.split('\n');
      const row = lines.find((l) => l.startsWith(manyId))!;
      expect(row.split(/\s+/)[3]).toBe(`${bots[0]},${bots[1]},+10`);
      expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(3 * 40 + 120);
      const entry = (JSON.parse((await cli('keys', 'list', '--json')).stdout) as Array<{ id: string; bots: string[] }>).find((k) => k.id === manyId);
      expect(entry!.bots).toEqual(bots);
      await db().db.deleteFrom('api_keys').where('id', '=', manyId).execute();
    });

    it.sequential('revoke ID revokes the key at once', async () => {
      const result = await cli('keys', 'revoke', id);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(id);
      await expect(authenticate(`Bearer ${key}`, readKeys(db().readDb))).rejects.toMatchObject({ code: 'unauthorized' });
      const list = await cli('keys', 'list');
      expect(list.stdout.split('\n').find((l) => l.startsWith(id))).toMatch(/^\S+\s+revoked\s/);
    });

    it.sequential('revoke of an unknown id and create with a bad scope fail clearly, printing nothing on stdout', async () => {
      const [unknown, badScope] = await Promise.all([
        cli('keys', 'revoke', 'nosuchkey0000000'),
        cli('keys', 'create', '--scopes', 'copilots:read,copilots:delete'),
      ]);
      // A bad value or an unknown id is exit 2, as every failure; 1 is validate's findings alone.
      expect(unknown.code).toBe(2);
      expect(unknown.stdout).toBe('');
      expect(unknown.stderr).toMatch(/no api key has this id/i);

      expect(badScope.code).toBe(2);
      expect(badScope.stdout).toBe('');
      expect(badScope.stderr).toContain('copilots:delete'); // names the culprit…
      expect(badScope.stderr).toContain('knowledgebase:delete'); // …and the valid ones
      for (const out of [unknown.stderr, badScope.stderr]) expect(out).not.toMatch(/\n\s+at /); // no stack trace
      expect(await listApiKeys(db().readDb)).toHaveLength(1);
    });

    it.sequential('create refuses an empty, blank or unknown bot list instead of a key for every bot', async () => {
      for (const bots of ['', ' , ', randomUUID()]) {
        const result = await cli('keys', 'create', '--scopes', 'admin', '--bots', bots);
        expect(result.code, `--bots "${bots}"`).not.toBe(0);
        expect(result.stdout).toBe('');
        expect(result.stderr).toMatch(/bots/);
      }
      expect(await listApiKeys(db().readDb)).toHaveLength(1);
    });

    it.sequential('copilots purge removes a deleted copilot; purge-deleted removes those deleted long enough ago', async () => {
      const { deleteCopilot } = await import('../../src/domain/copilots/copilot.service.js');
      const live = await cli('copilots', 'purge', bot);
      expect(live.code).not.toBe(0);
      expect(live.stderr).toMatch(/delete it first/);
      // With a knowledge base: a purge hides its passages, and the CLI deletes them before it exits (no housekeeping job runs after it).
      const passages = async (id: string) =>
        Number((await sql<{ n: number }>`select count(*) as n from kb_passages where bot_id = ${id}`.execute(db().db)).rows[0]!.n);
      await seedIndexedLinks(db().db, bot, [{ url: 'https://purged.example/page', passages: ['A purged passage.', 'Another purged passage.'] }]);
      await deleteCopilot(db().db, bot);
      const purged = await cli('copilots', 'purge', bot);
      expect(purged.code, purged.stderr).toBe(0);
      expect(purged.stdout).toBe(`Purged ${bot}: 0 documents, 1 links, 2 passages\n`);
      const { rows } = await sql<{ n: number }>`select count(*) as n from copilots where id = ${bot}`.execute(db().db);
      expect(Number(rows[0]!.n)).toBe(0);
      expect(await passages(bot)).toBe(0);

      const old = (await createCopilot(db().db, { name: 'old' })).id;
      await seedIndexedLinks(db().db, old, [{ url: 'https://purged.example/old', passages: ['An old passage.'] }]);
      await deleteCopilot(db().db, old);
      const kept = await cli('copilots', 'purge-deleted', '--older-than-days', '1');
      expect(kept.stdout).toBe('Purged 0 deleted copilots\n');
      expect(await passages(old)).toBe(1);
      const all = await cli('copilots', 'purge-deleted', '--older-than-days', '0');
      expect(all.code, all.stderr).toBe(0);
      expect(all.stdout).toBe('Purged 1 deleted copilot\n');
      expect(await passages(old)).toBe(0);
      // A number past the limit names the limit (operator sweep: "a whole number of days" for 100000).
      const past = await cli('copilots', 'purge-deleted', '--older-than-days', '100000');
      expect(past.code).toBe(2);
      expect(past.stderr).toContain('0 to 99999');
    });

    it.sequential('create keeps the limits of POST /backend/api/keys; list shows a name’s control characters escaped', async () => {
      const before = (await listApiKeys(db().readDb)).length;
      const scopes = Array.from({ length: 11 }, () => 'copilots:read').join(',');
      for (const args of [
        ['--scopes', 'copilots:read', '--name', 'n'.repeat(201)],
        ['--scopes', scopes],
      ]) {
        const refused = await cli('keys', 'create', ...args);
        expect(refused.code, args.join(' ').slice(0, 40)).toBe(2);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toMatch(/^(name must not have more than 200 characters|scopes must not have more than 10 items)\.\n$/);
      }
      expect(await listApiKeys(db().readDb)).toHaveLength(before);
      // A name that would forge a row of its own, clear the screen and turn it red: refused now,
      // as the API refuses it; one stored before that is listed escaped.
      const forgery = 'x\n\u001b[2J\u001b[31mFAKE  active  admin';
      const refused = await cli('keys', 'create', '--scopes', 'copilots:read', '--name', forgery);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe('The field name must not contain control or invisible formatting characters (U+000A).\n');
      const forged = await cli('keys', 'create', '--scopes', 'copilots:read', '--name', 'to be forged');
      expect(forged.code, forged.stderr).toBe(0);
      await db().db.updateTable('api_keys').set({ name: forgery }).where('name', '=', 'to be forged').execute();
      const listed = await cli('keys', 'list');
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
      expect(listed.stdout.trimEnd().split('\n')).toHaveLength(before + 2);
      expect(listed.stdout).toContain('x\\u000a\\u001b[2J\\u001b[31mFAKE');
    });

    it.sequential('a key whose secret cannot be written (a full disk, a reader gone) is revoked at once: exit 2, and said so', async () => {
      const env = { DATA_DIR: database.dataDir, ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }) };
      for (const broken of ['full', 'closed'] as const) {
        const before = new Set((await listApiKeys(db().readDb)).map((k) => k.id));
        const result = await runWithBrokenStdout(['keys', 'create', '--scopes', 'admin', '--name', `lost-${broken}`], env, database.dataDir, broken);
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toMatch(/^The key \S+ was revoked: its secret could not be written to standard output\.\n/);
        expect(result.stderr).not.toMatch(/\n\s+at /);
        const made = (await listApiKeys(db().readDb)).filter((k) => !before.has(k.id));
        expect(made.map((k) => [k.name, k.revoked_at !== null])).toEqual([[`lost-${broken}`, true]]);
      }
    });

    it.sequential('the other commands end a run whose standard output is full or gone without a stack trace', async () => {
      const env = { DATA_DIR: database.dataDir, ...(database.databaseUrl && { DATABASE_URL: database.databaseUrl }) };
      for (const args of [
        [],
        ['--version'],
        ['--help'],
        ['keys', 'generate'],
        ['keys', 'list'],
        ['migrate'],
        ['copilots', 'purge-deleted', '--older-than-days', '0'],
      ]) {
        // [] is the bare command: it prints the help.
        const full = await runWithBrokenStdout(args, env, database.dataDir, 'full');
        expect(full.code, args.join(' ')).toBe(2);
        expect(full.stderr, args.join(' ')).toMatch(/^Error: ENOSPC[^\n]*\n$/);
        // A reader that stops early changes nothing: the run ends as it would have.
        const closed = await runWithBrokenStdout(args, env, database.dataDir, 'closed');
        expect(closed, args.join(' ')).toEqual({ code: 0, stderr: '' });
      }
      // backup: an existing file is a bad value (exit 2), not a stack trace either.
      const existing = path.join(database.dataDir, 'existing.backup');
      writeFileSync(existing, '');
      const backup = await run(['backup', '--out', existing], env, database.dataDir);
      expect(backup.code).toBe(2);
      expect(backup.stderr).not.toMatch(/\n\s+at /);
      // Fifteen processes, each loading the CLI: 20 s on a busy 2-core machine, over the default 30 s once.
    }, 120_000);
  });
}

describe('copilot-service usage errors', () => {
  it('create without --scopes is a usage error', async () => {
    const result = await run(['keys', 'create', '--name', 'y'], { DATA_DIR: '/nonexistent/never-created' }, '/');
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/--scopes/);
  });

  it('a bad DATABASE_URL is reported clearly, with no key printed', async () => {
    const result = await run(['keys', 'create', '--scopes', 'admin'], { DATABASE_URL: 'mysql://x' }, '/');
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('DATABASE_URL');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("the admin commands refuse a place that holds no database of the service (DATA_DIR elsewhere, an empty PostgreSQL database), creating nothing there; migrate still makes one (operator sweep: a stray database was made and an admin key nobody's service knows printed)", async () => {
    const parent = mkdtempSync(path.join(tmpdir(), 'cms-cli-nowhere-'));
    const empty = DIALECTS.includes('postgres') ? await createTestDatabase('postgres') : null;
    try {
      const commands = [
        ['keys', 'list'],
        ['keys', 'create', '--scopes', 'admin'],
        ['keys', 'revoke', 'AAAAAAAAAAAAAAAA'],
        ['copilots', 'purge-deleted', '--older-than-days', '0'],
      ];
      const nowhere = path.join(parent, 'not-here');
      for (const args of commands) {
        const result = await run(args, { DATA_DIR: nowhere }, parent);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stdout, args.join(' ')).toBe('');
        expect(result.stderr, args.join(' ')).toContain(`There is no SQLite database at ${path.join(nowhere, 'copilot-service.sqlite')}`);
      }
      expect(readdirSync(parent)).toEqual([]);
      if (empty) {
        for (const args of commands) {
          const result = await run(args, { DATA_DIR: empty.dataDir, DATABASE_URL: empty.databaseUrl! }, parent);
          expect(result.code, args.join(' ')).toBe(2);
          expect(result.stdout, args.join(' ')).toBe('');
          expect(result.stderr, args.join(' ')).toMatch(/holds no copilot-service schema/);
        }
        const storage = openStorage({ databaseUrl: empty.databaseUrl, dataDir: empty.dataDir, poolSize: 1 });
        try {
          const tables = await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = 'public'`.execute(storage.db);
          expect(tables.rows[0]!.n).toBe(0);
        } finally {
          await storage.close();
        }
      }
      expect((await run(['migrate'], { DATA_DIR: nowhere }, parent)).code).toBe(0);
      expect((await run(['keys', 'list'], { DATA_DIR: nowhere }, parent)).code).toBe(0);
    } finally {
      await empty?.drop();
      rmSync(parent, { recursive: true, force: true });
    }
    // Ten CLI processes one after another: past the default 30 s on a busy machine (a full run).
  }, 120_000);

  it('a database out of reach is named, as the service names it, never with its password (keys, migrate, copilots)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cms-cli-unreachable-'));
    try {
      for (const args of [['keys', 'list'], ['migrate'], ['copilots', 'purge-deleted', '--older-than-days', '0']]) {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        const result = await run(args, { DATA_DIR: dir, DATABASE_URL: 'postgres://someone:sekret-pw@127.0.0.1:1/copilots' }, dir);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stderr, args.join(' ')).toContain('PostgreSQL at 127.0.0.1:1/copilots');
        expect(result.stdout + result.stderr).not.toContain('sekret-pw');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Issue 17 §1: a value for ADMIN_API_KEY, made without a database.
describe('copilot-service keys generate', () => {
  it('prints a new key in the service format, alone, touching no database; ADMIN_API_KEY accepts it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cms-generate-'));
    try {
      const [a, b] = await Promise.all([run(['keys', 'generate'], { DATA_DIR: dir }, dir), run(['keys', 'generate'], { DATA_DIR: dir }, dir)]);
      for (const result of [a, b]) {
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toMatch(KEY_ALONE);
        expect(loadConfig({ ADMIN_API_KEY: result.stdout }).adminApiKey).toBe(result.stdout.trim());
      }
      expect(a.stdout).not.toBe(b.stdout);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
