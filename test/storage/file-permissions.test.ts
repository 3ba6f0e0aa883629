/**
 * Issue 13 §7: DATA_DIR holds every copilot token, the documents and the knowledge-base
 * text: the directory is created 0700 and the SQLite file, its WAL and SHM are 0600, also
 * when an older install left them readable by others.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY_FILE, ensureBootstrapAdminKey } from '../../src/domain/auth/api-keys.js';
import { openStorage, SQLITE_FILE_NAME } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { holdInstanceLock, INSTANCE_LOCK_FILE } from '../../src/storage/instance-lock.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const mode = (file: string) => statSync(file).mode & 0o777;

describe('file permissions of the data directory', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  const freshRoot = () => {
    const root = mkdtempSync(path.join(tmpdir(), 'cms-perm-'));
    roots.push(root);
    return root;
  };

  it('SQLite: creates the directory 0700 and the database, WAL and SHM files 0600', async () => {
    const previous = process.umask(0o022);
    try {
      const dataDir = path.join(freshRoot(), 'data', 'nested');
      const storage = openStorage({ databaseUrl: null, dataDir });
      await migrateToLatest(storage);
      const file = path.join(dataDir, SQLITE_FILE_NAME);
      expect(mode(dataDir)).toBe(0o700);
      expect(mode(path.dirname(dataDir))).toBe(0o700);
      for (const each of [file, `${file}-wal`, `${file}-shm`]) expect(mode(each), each).toBe(0o600);
      await storage.close();
    } finally {
      process.umask(previous);
    }
  });

  it('SQLite: tightens database files an older install left readable by others', async () => {
    const dataDir = path.join(freshRoot(), 'data');
    mkdirSync(dataDir);
    const file = path.join(dataDir, SQLITE_FILE_NAME);
    const first = openStorage({ databaseUrl: null, dataDir });
    await migrateToLatest(first);
    await first.close();
    chmodSync(file, 0o644);
    writeFileSync(`${file}-wal`, '');
    chmodSync(`${file}-wal`, 0o644);
    const again = openStorage({ databaseUrl: null, dataDir });
    expect(mode(file)).toBe(0o600);
    expect(mode(`${file}-wal`)).toBe(0o600);
    await again.close();
  });

  it("SQLite: the serving instance's lock file and its journal are 0600, like the database's", () => {
    const previous = process.umask(0o022);
    try {
      const dataDir = freshRoot();
      const lock = holdInstanceLock(dataDir);
      try {
        const file = path.join(dataDir, INSTANCE_LOCK_FILE);
        expect(mode(file)).toBe(0o600);
        if (existsSync(`${file}-journal`)) expect(mode(`${file}-journal`)).toBe(0o600);
      } finally {
        lock.release();
      }
      // An older install's lock file, left readable by others, is tightened.
      chmodSync(path.join(dataDir, INSTANCE_LOCK_FILE), 0o644);
      holdInstanceLock(dataDir).release();
      expect(mode(path.join(dataDir, INSTANCE_LOCK_FILE))).toBe(0o600);
    } finally {
      process.umask(previous);
    }
  });

  for (const dialect of DIALECTS) {
    it(`${dialect}: the bootstrap key's directory is created 0700`, async () => {
      const { storage, cleanup } = await createTestStorage(dialect);
      try {
        const dataDir = path.join(freshRoot(), 'keys-here');
        const created = await ensureBootstrapAdminKey(storage.db, dataDir);
        expect(created).toEqual({ file: path.join(dataDir, BOOTSTRAP_KEY_FILE), replaced: null });
        expect(mode(dataDir)).toBe(0o700);
        expect(mode(created!.file)).toBe(0o600);
      } finally {
        await cleanup();
      }
    });

    it(`${dialect}: a DATA_DIR where the key file cannot be written stores no key (its secret would be lost), so the next start makes one`, async () => {
      const { storage, cleanup } = await createTestStorage(dialect);
      try {
        const notADirectory = path.join(freshRoot(), 'a-file');
        writeFileSync(notADirectory, 'x');
        await expect(ensureBootstrapAdminKey(storage.db, notADirectory)).rejects.toThrow(/not a directory/);
        expect(await storage.db.selectFrom('api_keys').select('id').execute()).toEqual([]);
      } finally {
        await cleanup();
      }
    });

    it(`${dialect}: a key file already in DATA_DIR (another database's first key) is kept beside, never overwritten`, async () => {
      const { storage, cleanup } = await createTestStorage(dialect);
      try {
        const dataDir = freshRoot();
        const file = path.join(dataDir, BOOTSTRAP_KEY_FILE);
        writeFileSync(file, 'cms_otherDatabaseKey_0123456789abcdef0123456789abcdef\n', { mode: 0o600 });
        const created = await ensureBootstrapAdminKey(storage.db, dataDir);
        expect(created!.replaced).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.replaced-`));
        expect(readFileSync(created!.replaced!, 'utf8')).toBe('cms_otherDatabaseKey_0123456789abcdef0123456789abcdef\n');
        expect(readFileSync(file, 'utf8')).toMatch(/^cms_bootstrapAdmin00_/);
      } finally {
        await cleanup();
      }
    });
  }
});
