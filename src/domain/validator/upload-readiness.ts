import { PLATFORM_IDS, type Platform, type Readiness } from './wire-types.js';

/** What an upload keeps of its validation (issue 17 §3): the score and the platforms it is ready for. */
export interface UploadReadiness {
  score: number;
  readyPlatforms: Platform[];
}

/**
 * The readiness summary of a validation answer (its JSON bytes, `validations.readiness`), or
 * null when it has none. Parses the whole answer: run it on a task thread (tasks.readiness).
 */
export function readinessOfAnswer(answer: Buffer): UploadReadiness | null {
  try {
    const readiness = (JSON.parse(answer.toString('utf8')) as { validations?: { readiness?: Readiness } }).validations?.readiness;
    if (!readiness || typeof readiness.score !== 'number') return null;
    return { score: readiness.score, readyPlatforms: PLATFORM_IDS.filter((p) => readiness.platforms?.[p]?.ready === true) };
  } catch {
    return null;
  }
}
