/**
 * Section 5 — the changes between two versions of an API description (issue 16 §1's target:
 * diffing two versions of a 4 MB description costs at most twice validating it). Both sides
 * start from the bytes: validating is parse + validate + render, diffing is two parses + the
 * diff, in this process (the service runs either on a task thread).
 */
import { generateOpenApi, operationsForSize } from '../generate-openapi.js';
import { diffApiDescriptions } from '../../src/domain/api-changes/diff.js';
import { parseDocument, renderResult, validateDocument } from '../../src/domain/validator/index.js';
import { median, round } from '../lib/stats.js';

export interface ApiChangesResult {
  bytes: number;
  operations: number;
  changes: number;
  validate_ms: number[];
  diff_ms: number[];
  median_validate_ms: number;
  median_diff_ms: number;
}

export function benchApiChanges(opts: { bytes: number; runs: number; log: (line: string) => void }): ApiChangesResult {
  const operations = operationsForSize(opts.bytes, 'json');
  const older = generateOpenApi({ operations }) as { paths: Record<string, unknown>; servers?: unknown };
  const newer = structuredClone(older);
  // Every 50th path removed and the server changed: a release with breaking changes.
  const paths = Object.keys(newer.paths);
  for (let i = 0; i < paths.length; i += 50) delete newer.paths[paths[i]!];
  newer.servers = [{ url: 'https://changed.example.com' }];
  const olderBytes = Buffer.from(JSON.stringify(older, null, 2));
  const newerBytes = Buffer.from(JSON.stringify(newer, null, 2));
  const read = (bytes: Buffer) => parseDocument({ bytes, fileName: 'api.json' });
  const validate_ms: number[] = [];
  const diff_ms: number[] = [];
  let changes = 0;
  for (let r = -1; r < opts.runs; r++) {
    let started = performance.now();
    renderResult(validateDocument(read(olderBytes), { documentBytes: olderBytes.length }));
    const v = performance.now() - started;
    started = performance.now();
    changes = diffApiDescriptions(read(olderBytes), read(newerBytes)).length;
    const d = performance.now() - started;
    if (r >= 0) {
      validate_ms.push(round(v, 1));
      diff_ms.push(round(d, 1));
    }
  }
  opts.log(`    ${(olderBytes.length / 1024 / 1024).toFixed(2)} MiB, ${changes} changes: validate ${validate_ms.join(', ')} ms; diff ${diff_ms.join(', ')} ms`);
  return {
    bytes: olderBytes.length,
    operations,
    changes,
    validate_ms,
    diff_ms,
    median_validate_ms: round(median(validate_ms), 1),
    median_diff_ms: round(median(diff_ms), 1),
  };
}
