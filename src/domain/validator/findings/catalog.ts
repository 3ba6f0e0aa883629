import type { EndpointFindingKey } from '../wire-types.js';

/** How people read an endpoint finding. */
export interface EndpointFindingText {
  readonly key: EndpointFindingKey;
  /** The dashboard's short id (its filter and `data-stat` attributes). */
  readonly kind: string;
  /** A few words for the CLI's table, e.g. "no operationId". */
  readonly label: string;
  /** The dashboard's heading for the finding. */
  readonly title: string;
  /** Why it matters to an LLM, in one sentence. */
  readonly why: string;
}

/**
 * The text of every endpoint finding, in the order of `ENDPOINT_FINDINGS` (findings/index.ts;
 * a test holds the two in step). Data only: the CLI and the dashboard (which bundles this
 * file) both read it, so a finding is named in one place.
 */
export const ENDPOINT_FINDING_TEXTS = [
  {
    key: 'endpoints_without_operation_id',
    kind: 'no_operation_id',
    label: 'no operationId',
    title: 'Without operationId',
    why: 'No operationId: an LLM calls each endpoint as a tool named by its operationId.',
  },
  {
    key: 'endpoints_without_description',
    kind: 'no_description',
    label: 'no description',
    title: 'Without description',
    why: 'No description: the LLM cannot tell when this endpoint is the right one to call.',
  },
  {
    key: 'endpoints_without_name',
    kind: 'no_name',
    label: 'no summary',
    title: 'Without name',
    why: 'No summary (name): the endpoint has no short human-readable name.',
  },
] as const satisfies readonly EndpointFindingText[];
