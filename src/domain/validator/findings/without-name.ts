import { isBlank, type EndpointFinding } from './finding.js';

/** Interface §2.4: the endpoint's name is the operation's `summary`. */
export const withoutName: EndpointFinding = {
  kind: 'endpoint',
  key: 'endpoints_without_name',
  flag(endpoints) {
    const out: number[] = [];
    for (let i = 0; i < endpoints.length; i++) if (isBlank(endpoints[i]!.name)) out.push(i);
    return out;
  },
};
