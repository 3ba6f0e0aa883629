import type { ApiDocument, Endpoint, Validations } from '../types.js';
import type { EndpointFindingKey } from '../wire-types.js';

export type { EndpointFindingKey } from '../wire-types.js';
/** Keys of `validations` whose value describes the whole document. */
export type DocumentFindingKey = Exclude<keyof Validations, EndpointFindingKey>;

/** A check of each endpoint; its result is the map of flagged endpoints. Its text for people is in catalog.ts. */
export interface EndpointFinding {
  readonly kind: 'endpoint';
  readonly key: EndpointFindingKey;
  /** Indexes (ascending) of the endpoints this finding flags. */
  flag(endpoints: readonly Endpoint[], doc: ApiDocument): number[];
}

/** A property of the whole document. */
export interface DocumentFinding<K extends DocumentFindingKey = DocumentFindingKey> {
  readonly kind: 'document';
  readonly key: K;
  compute(doc: ApiDocument): Validations[K];
}

export type Finding = EndpointFinding | { [K in DocumentFindingKey]: DocumentFinding<K> }[DocumentFindingKey];

/** Missing, as DESIGN §5 counts it: absent, not a string, or only white space. */
export function isBlank(value: unknown): boolean {
  return typeof value !== 'string' || value.trim() === '';
}
