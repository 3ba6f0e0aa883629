import type { EndpointSource } from '../endpoints.js';
import type { ApiDocument, Endpoint } from '../types.js';
import type { RuleFinding } from '../wire-types.js';
import { authRules } from './auth.js';
import { effectRules } from './effects.js';
import { operationIdRules } from './operation-id.js';
import { parameterRules } from './parameters.js';
import { referenceRules } from './references.js';
import { requestBodyRules } from './request-body.js';
import { responseRules } from './responses.js';
import { createContext, type RuleFamily } from './rule.js';
import { serverRules } from './servers.js';
import { textRules } from './texts.js';
import { toolRules } from './tools.js';

export { readiness } from './readiness.js';
export { PLATFORMS, type Platform, type RuleFamily, type Severity } from './rule.js';

/**
 * Every rule family, in the order their findings appear in `validations.findings`
 * (README.md in this folder lists the rules; how to add one is there too).
 */
export const RULE_FAMILIES: readonly RuleFamily[] = [
  operationIdRules,
  textRules,
  parameterRules,
  requestBodyRules,
  responseRules,
  effectRules,
  referenceRules,
  serverRules,
  authRules,
  toolRules,
];

/** Every rule id, in registry order. */
export const RULE_IDS: readonly string[] = RULE_FAMILIES.flatMap((f) => Object.keys(f.rules));

/** What each rule finds, in one sentence, by id. */
export const RULE_TEXTS: Readonly<Record<string, string>> = Object.assign({}, ...RULE_FAMILIES.map((f) => f.rules));

/** The findings of every rule for a document. Findings are values: nothing here throws. */
export function runRules(doc: ApiDocument, endpoints: readonly Endpoint[], sources: readonly EndpointSource[]): RuleFinding[] {
  const out: RuleFinding[] = [];
  const ctx = createContext(doc, endpoints, sources, out);
  for (const family of RULE_FAMILIES) family.check(ctx);
  return out;
}
