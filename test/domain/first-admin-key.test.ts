/**
 * ADMIN_API_KEY (issue 17 §1): stored only while the database holds no key. On a database that
 * holds others, the start must learn whether the variable still opens it, to say so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey, seedAdminKey } from '../../src/domain/auth/api-keys.js';
import type { Storage } from '../../src/storage/database.js';
import { createTestStorage, DIALECTS } from '../support/databases.js';

const preset = (id: string) => `cms_${id}_${'s3cr3t'.repeat(5)}zz`;

for (const dialect of DIALECTS) {
  describe(`seedAdminKey (${dialect})`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ storage, cleanup } = await createTestStorage(dialect));
    });
    afterAll(async () => cleanup());

    it('stores the key on an empty database; later it works without being stored again; another key does not work', async () => {
      expect(await seedAdminKey(storage.db, preset('Seed0Admin0Key00'))).toEqual({ id: 'Seed0Admin0Key00', stored: true, works: true });
      expect(await seedAdminKey(storage.db, preset('Seed0Admin0Key00'))).toEqual({ id: 'Seed0Admin0Key00', stored: false, works: true });
      expect(await seedAdminKey(storage.db, preset('Other0Admin0Key0'))).toEqual({ id: 'Other0Admin0Key0', stored: false, works: false });
      // The id of a stored key with another secret opens nothing either.
      expect((await seedAdminKey(storage.db, `cms_Seed0Admin0Key00_${'x'.repeat(32)}`)).works).toBe(false);
    });

    it('a revoked key, or one limited to bots or scopes, is not an admin key of the database', async () => {
      const limited = await createApiKey(storage.db, { scopes: ['copilots:read'], name: 'reader' });
      expect(await seedAdminKey(storage.db, limited.key)).toMatchObject({ stored: false, works: false });
      await revokeApiKey(storage.db, 'Seed0Admin0Key00');
      expect(await seedAdminKey(storage.db, preset('Seed0Admin0Key00'))).toMatchObject({ stored: false, works: false });
    });
  });
}
