import { isBlank, type EndpointFinding } from './finding.js';

/** Interface §2.4: the description is what tells an LLM when to use an endpoint. */
export const withoutDescription: EndpointFinding = {
  kind: 'endpoint',
  key: 'endpoints_without_description',
  flag(endpoints) {
    const out: number[] = [];
    for (let i = 0; i < endpoints.length; i++) if (isBlank(endpoints[i]!.description)) out.push(i);
    return out;
  },
};
