import type { Readiness, RuleFinding } from '../wire-types.js';
import { PLATFORMS } from './rule.js';

/** Points a finding costs its endpoint (or the document), by severity. */
export const PENALTY = { error: 20, warning: 5, info: 1 } as const;
/** The document's own share of the score (servers, auth, refs outside operations, tool count). */
export const DOCUMENT_WEIGHT = 0.2;
export const WORST_ENDPOINTS = 10;

/**
 * `validations.readiness` from the findings (formula: README.md in this folder).
 * Each endpoint and the document start at 100 and lose PENALTY points per finding on them
 * (floored at 0); the score is 80% the endpoints' mean (0 when there are none) and 20% the
 * document's, rounded. A platform is ready when no error-severity finding lists it.
 */
export function readiness(findings: readonly RuleFinding[], endpointCount: number): Readiness {
  const lost = new Float64Array(endpointCount);
  let documentLost = 0;
  const platforms = {} as Readiness['platforms'];
  for (const p of PLATFORMS) platforms[p] = { ready: true, blocking: 0, warnings: 0 };
  for (const f of findings) {
    const points = PENALTY[f.severity];
    if (f.endpoint === null) documentLost += points;
    else if (f.endpoint < endpointCount) lost[f.endpoint]! += points;
    if (f.severity === 'info') continue;
    for (const p of f.platforms) {
      const verdict = platforms[p];
      if (!verdict) continue;
      if (f.severity === 'error') {
        verdict.blocking++;
        verdict.ready = false;
      } else {
        verdict.warnings++;
      }
    }
  }
  let sum = 0;
  const flagged: number[] = [];
  for (let i = 0; i < endpointCount; i++) {
    sum += Math.max(0, 100 - lost[i]!);
    if (lost[i]! > 0) flagged.push(i);
  }
  const endpointsMean = endpointCount === 0 ? 0 : sum / endpointCount;
  const score = Math.round((1 - DOCUMENT_WEIGHT) * endpointsMean + DOCUMENT_WEIGHT * Math.max(0, 100 - documentLost));
  flagged.sort((a, b) => lost[b]! - lost[a]! || a - b);
  return { score, platforms, worst_endpoints: flagged.slice(0, WORST_ENDPOINTS) };
}
