import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The real API descriptions the tests read: test/fixtures/specs, the repository's byte-for-byte
 * copy of ../shared/specs (spec-corpus.test.ts compares them where ../shared is beside the
 * checkout), so a clone alone runs every case.
 */
export const SPECS_DIR = fileURLToPath(new URL('../fixtures/specs/', import.meta.url));

/** The corpus's documents (JSON and YAML), by file name. */
export const SPEC_FILES: readonly string[] = readdirSync(SPECS_DIR)
  .filter((f) => /\.(json|ya?ml)$/.test(f))
  .sort();
