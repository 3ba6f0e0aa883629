import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SPEC_FILES, SPECS_DIR } from '../../support/specs.js';

/** The repository's copy of the shared corpus is the corpus: same files, same bytes. */
const SHARED = fileURLToPath(new URL('../../../../shared/specs/', import.meta.url));

describe('test/fixtures/specs', () => {
  it('holds the 15 real descriptions the validator, tools, fixes and diff tests read', () => {
    expect(SPEC_FILES).toHaveLength(15);
  });

  it.skipIf(!existsSync(SHARED))('is ../shared/specs byte for byte', () => {
    expect(readdirSync(SPECS_DIR).sort()).toEqual(readdirSync(SHARED).sort());
    for (const name of readdirSync(SHARED)) expect(readFileSync(SPECS_DIR + name).equals(readFileSync(SHARED + name)), name).toBe(true);
  });
});
