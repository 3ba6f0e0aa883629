// Types only from wire-types.ts (its TypeBox schemas stay out of the CLI's bundle); the list from the rules.
import { PLATFORMS } from './rules/rule.js';
import type { Platform, Readiness } from './wire-types.js';

/** What an upload keeps of its validation (issue 17 §3): the score and the platforms it is ready for. */
export interface UploadReadiness {
  score: number;
  readyPlatforms: Platform[];
}

/** The summary an upload keeps of a validation's `readiness`: read where the answer is rendered, kept beside it in the validation cache. */
export function uploadReadiness(readiness: Readiness): UploadReadiness {
  return { score: readiness.score, readyPlatforms: PLATFORMS.filter((p) => readiness.platforms[p]?.ready === true) };
}
