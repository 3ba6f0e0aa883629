import type { ApiDocument, Endpoint, FlagMap, Validations } from '../types.js';

/** Keys of `validations` whose value is an index → endpoint map. */
export type EndpointFindingKey = { [K in keyof Validations]: Validations[K] extends FlagMap ? K : never }[keyof Validations];
/** Keys of `validations` whose value describes the whole document. */
export type DocumentFindingKey = Exclude<keyof Validations, EndpointFindingKey>;

/** A check of each endpoint; its result is the map of flagged endpoints. */
export interface EndpointFinding {
  readonly kind: 'endpoint';
  readonly key: EndpointFindingKey;
  /** A few words for the CLI's table, e.g. "no operationId". */
  readonly label: string;
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
