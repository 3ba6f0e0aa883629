/**
 * The first admin key is stored, then its secret written to DATA_DIR/bootstrap-admin-key: when
 * that write fails (a full disk, say), the key is deleted again, since its secret is nowhere
 * else and the next start must make another. As root no directory refuses the write once it is
 * ready, so the write is made to fail here.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { BOOTSTRAP_KEY_FILE, BOOTSTRAP_KEY_ID, ensureBootstrapAdminKey } from '../../src/domain/auth/api-keys.js';
import { DataDirError } from '../../src/storage/data-dir.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const write = vi.hoisted(() => ({ fail: null as string | null }));
vi.mock('node:fs/promises', async (original) => {
  const fs = await original<typeof import('node:fs/promises')>();
  return {
    ...fs,
    writeFile: (async (...args: Parameters<typeof fs.writeFile>) => {
      if (write.fail !== null) throw Object.assign(new Error(`${write.fail}: the write failed`), { code: write.fail });
      return fs.writeFile(...args);
    }) as typeof fs.writeFile,
  };
});

const root = mkdtempSync(path.join(tmpdir(), 'cms-rollback-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

for (const dialect of DIALECTS) {
  describe(`the first admin key when its file cannot be written (${dialect})`, () => {
    it('is deleted again, and the next start makes one', async () => {
      const { storage, cleanup } = await createTestStorage(dialect);
      try {
        const dataDir = path.join(root, dialect);
        // Said as every DATA_DIR problem is, the start's one line (operator sweep: a raw EACCES on PostgreSQL, after the migrations).
        for (const [code, why] of [
          ['ENOSPC', 'the disk is full'],
          ['EACCES', 'permission denied'],
        ] as const) {
          write.fail = code;
          const failed = ensureBootstrapAdminKey(storage.db, dataDir);
          await expect(failed).rejects.toBeInstanceOf(DataDirError);
          await expect(failed).rejects.toThrow(`DATA_DIR ${dataDir} cannot be used by user`);
          await expect(failed).rejects.toThrow(why);
          expect(await storage.db.selectFrom('api_keys').select('id').execute()).toEqual([]);
        }
        write.fail = null;
        expect(await ensureBootstrapAdminKey(storage.db, dataDir)).toEqual({ file: path.join(dataDir, BOOTSTRAP_KEY_FILE), replaced: null });
        expect(existsSync(path.join(dataDir, BOOTSTRAP_KEY_FILE))).toBe(true);
        expect(await storage.db.selectFrom('api_keys').select('id').execute()).toEqual([{ id: BOOTSTRAP_KEY_ID }]);
      } finally {
        write.fail = null;
        await cleanup();
      }
    });
  });
}
