import { extractEndpoints } from '../validator/endpoints.js';
import { authType } from '../validator/findings/auth-type.js';
import { baseUrl } from '../validator/findings/base-url.js';
import { isPlainObject } from '../validator/problems.js';
import { resolveLocalRef } from '../validator/refs.js';
import { checkRoot } from '../validator/root-check.js';
import type { ApiDocument, Endpoint } from '../validator/types.js';

/**
 * The changes between two versions of an API description, each classified breaking or
 * not for a copilot that calls the API (issue 16 §1). The rules, one row per kind, are in
 * README.md. Both versions go through the validator's `extractEndpoints`, which puts
 * Swagger 2.0 in the OpenAPI 3 form, so one comparison serves 2.0, 3.x and a mix.
 */

export type ApiChangeKind =
  | 'auth-type-changed'
  | 'server-changed'
  | 'endpoint-added'
  | 'endpoint-removed'
  | 'path-parameter-renamed'
  | 'operation-id-changed'
  | 'parameter-added'
  | 'parameter-removed'
  | 'parameter-made-required'
  | 'parameter-made-optional'
  | 'request-body-added'
  | 'request-body-removed'
  | 'request-body-made-required'
  | 'request-body-made-optional'
  | 'response-added'
  | 'response-removed';

export interface ApiChange {
  kind: ApiChangeKind;
  breaking: boolean;
  /** Upper case; null for document-wide changes. */
  method: string | null;
  /** As written in the newer version (the older one for a removed endpoint); null for document-wide changes. */
  path: string | null;
  /** One sentence for people: what changed and why it matters to a copilot calling the API. */
  message: string;
  /** The value before (an operationId, a server URL, a parameter's name/in/required…), small; null when there was none. */
  before: unknown | null;
  after: unknown | null;
}

/** A parameter as the diff sees it: what identifies it and whether a caller must send it. */
export interface ParameterSummary {
  name: string;
  in: string;
  required: boolean;
}

/**
 * The changes from `before` to `after` (parsed documents, Swagger 2.0 or OpenAPI 3.x,
 * already accepted by the validator): document-wide changes first, then each endpoint of
 * the newer document in its order with its changes, then the removed endpoints in the
 * older document's order. Linear in the two documents. A root the validator would refuse
 * throws its `invalid_swagger_file` (callers pass accepted documents); anything below an
 * operation is read as the validator reads it and never throws.
 */
export function diffApiDescriptions(before: unknown, after: unknown): ApiChange[] {
  checkRoot(before);
  checkRoot(after);
  const changes: ApiChange[] = [];
  documentChanges(before, after, changes);

  const oldEndpoints = extractEndpoints(before);
  const newEndpoints = extractEndpoints(after);
  const pairs = matchEndpoints(oldEndpoints, newEndpoints);
  for (let i = 0; i < newEndpoints.length; i++) {
    const next = newEndpoints[i]!;
    const j = pairs.oldOfNew[i]!;
    if (j === -1) changes.push(endpointAdded(next));
    else endpointChanges(before, oldEndpoints[j]!, after, next, changes);
  }
  for (let j = 0; j < oldEndpoints.length; j++) {
    if (!pairs.oldMatched[j]) changes.push(endpointRemoved(oldEndpoints[j]!));
  }
  return changes;
}

/**
 * The most changes one version keeps. A small document can make far more (one anchored list of
 * 200 required parameters aliased into 400 operations and renamed: 160,000 changes, 50 MB of
 * rows per upload), which no reader pages through; the counts stay whole.
 */
export const MAX_KEPT_CHANGES = 10_000;

/** The changes kept of a version, and how many there were of each kind in all. */
export interface KeptChanges {
  changes: ApiChange[];
  breaking: number;
  other: number;
}

/** `all` counted, and cut to `max`: the breaking ones first (up to `max`), then the others, each kept in its place. */
export function keptChanges(all: ApiChange[], max = MAX_KEPT_CHANGES): KeptChanges {
  const { breaking, other } = summariseChanges(all);
  if (all.length <= max) return { changes: all, breaking, other };
  let othersLeft = Math.max(0, max - breaking);
  let breakingLeft = max;
  const changes = all.filter((change) => (change.breaking ? breakingLeft-- > 0 : othersLeft-- > 0));
  return { changes, breaking, other };
}

/** How many changes are breaking and how many are not ("since the last version: 2 breaking, 5 other"). */
export function summariseChanges(changes: readonly ApiChange[]): { breaking: number; other: number } {
  let breaking = 0;
  for (const change of changes) if (change.breaking) breaking++;
  return { breaking, other: changes.length - breaking };
}

// ---------------------------------------------------------------------------------------
// Document-wide: the validator's auth_type and base_url findings, compared.

function documentChanges(before: ApiDocument, after: ApiDocument, changes: ApiChange[]): void {
  const oldAuth = authType.compute(before);
  const newAuth = authType.compute(after);
  if (oldAuth !== newAuth) {
    changes.push({
      kind: 'auth-type-changed',
      breaking: true,
      method: null,
      path: null,
      message: `The authentication type changed from ${oldAuth} to ${newAuth}: a copilot configured for ${oldAuth} credentials will be refused until its credentials are set up again.`,
      before: oldAuth,
      after: newAuth,
    });
  }
  const oldServer = baseUrl.compute(before);
  const newServer = baseUrl.compute(after);
  if (sameServer(oldServer, newServer)) return;
  let message: string;
  if (oldServer === null) message = `The API now names its server (${newServer}): a copilot must be pointed at it to call the API.`;
  else if (newServer === null) message = `The API no longer names a server (it was ${oldServer}): a copilot cannot tell where to send its calls.`;
  else message = `The server changed from ${oldServer} to ${newServer}: a copilot still calling the old address may fail or reach the wrong API.`;
  changes.push({ kind: 'server-changed', breaking: true, method: null, path: null, message, before: oldServer, after: newServer });
}

/** Equal, or equal once trailing slashes are dropped (`https://api.x/` is `https://api.x`). */
function sameServer(a: string | null, b: string | null): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  return trimSlashes(a) === trimSlashes(b);
}

function trimSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url.charCodeAt(end - 1) === 47 /* / */) end--;
  return url.slice(0, end);
}

// ---------------------------------------------------------------------------------------
// Matching endpoints: method + path, path-parameter names ignored.

interface Matching {
  /** For each new endpoint, the index of its old endpoint, or -1. */
  oldOfNew: number[];
  oldMatched: boolean[];
}

/**
 * Two passes, so the matching is the same whichever document is called older: first the
 * same method and path as written, then, among what is left, the same method and path
 * with parameter names ignored, paired in document order (the i-th left in one with the
 * i-th left in the other). Two maps, each endpoint visited a bounded number of times.
 */
function matchEndpoints(oldEndpoints: readonly Endpoint[], newEndpoints: readonly Endpoint[]): Matching {
  const oldMatched = new Array<boolean>(oldEndpoints.length).fill(false);
  const oldOfNew = new Array<number>(newEndpoints.length).fill(-1);

  const exact = new Map<string, number>();
  for (let j = 0; j < oldEndpoints.length; j++) exact.set(`${oldEndpoints[j]!.type} ${oldEndpoints[j]!.path}`, j);
  let left = 0;
  for (let i = 0; i < newEndpoints.length; i++) {
    const j = exact.get(`${newEndpoints[i]!.type} ${newEndpoints[i]!.path}`);
    if (j === undefined) {
      left++;
      continue;
    }
    oldOfNew[i] = j;
    oldMatched[j] = true;
  }
  if (left === 0) return { oldOfNew, oldMatched };

  const byTemplate = new Map<string, number[]>();
  for (let j = 0; j < oldEndpoints.length; j++) {
    if (oldMatched[j]) continue;
    const key = `${oldEndpoints[j]!.type} ${normalisePath(oldEndpoints[j]!.path)}`;
    const list = byTemplate.get(key);
    if (list) list.push(j);
    else byTemplate.set(key, [j]);
  }
  const taken = new Map<string, number>();
  for (let i = 0; i < newEndpoints.length; i++) {
    if (oldOfNew[i] !== -1) continue;
    const key = `${newEndpoints[i]!.type} ${normalisePath(newEndpoints[i]!.path)}`;
    const list = byTemplate.get(key);
    if (!list) continue;
    const n = taken.get(key) ?? 0;
    if (n === list.length) continue;
    taken.set(key, n + 1);
    oldOfNew[i] = list[n]!;
    oldMatched[list[n]!] = true;
  }
  return { oldOfNew, oldMatched };
}

const TEMPLATE_PARAMETER = /\{[^{}]*\}/g;

/** `/pets/{petId}` → `/pets/{}`. */
function normalisePath(path: string): string {
  return path.includes('{') ? path.replace(TEMPLATE_PARAMETER, '{}') : path;
}

/** The parameter names of a path template, in order. */
function templateNames(path: string): string[] {
  const names: string[] = [];
  for (const match of path.matchAll(TEMPLATE_PARAMETER)) names.push(match[0].slice(1, -1));
  return names;
}

function endpointAdded(endpoint: Endpoint): ApiChange {
  return {
    kind: 'endpoint-added',
    breaking: false,
    method: endpoint.type,
    path: endpoint.path,
    message: `${label(endpoint)} was added: a copilot can offer it as a new tool; nothing it already calls is affected.`,
    before: null,
    after: { operationId: endpoint.operationId },
  };
}

function endpointRemoved(endpoint: Endpoint): ApiChange {
  return {
    kind: 'endpoint-removed',
    breaking: true,
    method: endpoint.type,
    path: endpoint.path,
    message: `${label(endpoint)} was removed: a copilot tool that calls it will fail.`,
    before: { operationId: endpoint.operationId },
    after: null,
  };
}

function label(endpoint: Endpoint): string {
  return `${endpoint.type} ${endpoint.path}${endpoint.operationId === null ? '' : ` (${endpoint.operationId})`}`;
}

// ---------------------------------------------------------------------------------------
// One matched endpoint: operationId, parameters, request body, responses, in that order.

function endpointChanges(oldDoc: ApiDocument, old: Endpoint, newDoc: ApiDocument, next: Endpoint, changes: ApiChange[]): void {
  const change = (kind: ApiChangeKind, breaking: boolean, message: string, before: unknown, after: unknown): void => {
    changes.push({ kind, breaking, method: next.type, path: next.path, message: `${next.type} ${next.path}: ${message}`, before, after });
  };

  // Old path-parameter names → new ones, by position, so a renamed template parameter is one change, not a removal and an addition.
  let renamed: Map<string, string> | null = null;
  if (old.path !== next.path) {
    change(
      'path-parameter-renamed',
      false,
      `its path parameters were renamed (it was ${old.path}); the URL a copilot builds is the same.`,
      old.path,
      next.path,
    );
    const oldNames = templateNames(old.path);
    const newNames = templateNames(next.path);
    renamed = new Map();
    for (let k = 0; k < oldNames.length && k < newNames.length; k++) renamed.set(oldNames[k]!, newNames[k]!);
  }

  if (old.operationId !== next.operationId) {
    // A copilot's tool is named by the operationId (by method and path when there is none): any change renames the tool.
    const what =
      old.operationId === null
        ? `it now has the operationId ${next.operationId}: a copilot's tool, named after the method and path until now, takes that name`
        : next.operationId === null
          ? `its operationId ${old.operationId} was removed: a copilot's tool of that name no longer matches an operation`
          : `its operationId changed from ${old.operationId} to ${next.operationId}: a copilot's tool of the old name no longer matches an operation`;
    change('operation-id-changed', true, `${what}.`, old.operationId, next.operationId);
  }

  parameterChanges(oldDoc, old, newDoc, next, renamed, change);
  requestBodyChanges(oldDoc, old, newDoc, next, change);
  responseChanges(old, next, change);
}

type Report = (kind: ApiChangeKind, breaking: boolean, message: string, before: unknown, after: unknown) => void;

function parameterChanges(oldDoc: ApiDocument, old: Endpoint, newDoc: ApiDocument, next: Endpoint, renamed: Map<string, string> | null, change: Report): void {
  const oldParameters = parameterSummaries(oldDoc, old.requestParameters);
  const newParameters = parameterSummaries(newDoc, next.requestParameters);
  if (oldParameters.size === 0 && newParameters.size === 0) return;
  const oldByKey = new Map<string, ParameterSummary>();
  for (const [key, parameter] of oldParameters) {
    const name = parameter.in === 'path' ? renamed?.get(parameter.name) : undefined;
    oldByKey.set(name === undefined ? key : parameterKey(name, 'path'), parameter);
  }
  const seen = new Set<string>();
  for (const [key, parameter] of newParameters) {
    const previous = oldByKey.get(key);
    const shown = `${parameter.in} parameter ${parameter.name}`;
    if (previous === undefined) {
      if (parameter.required)
        change('parameter-added', true, `a required ${shown} was added: a copilot that does not send it will be refused.`, null, parameter);
      else change('parameter-added', false, `an optional ${shown} was added: a copilot may use it and works without it.`, null, parameter);
      continue;
    }
    seen.add(key);
    if (!previous.required && parameter.required) {
      change('parameter-made-required', true, `the ${shown} is now required: a copilot that leaves it out will be refused.`, previous, parameter);
    } else if (previous.required && !parameter.required) {
      change('parameter-made-optional', false, `the ${shown} is now optional: a copilot that sends it still works.`, previous, parameter);
    }
  }
  for (const [key, parameter] of oldByKey) {
    if (seen.has(key)) continue;
    change(
      'parameter-removed',
      false,
      `the ${parameter.in} parameter ${parameter.name} was removed: a copilot that still sends it is normally not refused, but the value no longer has an effect.`,
      parameter,
      null,
    );
  }
}

/**
 * Name, in and required of each parameter, keyed by in + name; a local `$ref` is resolved
 * to learn them. Header names compare without case (HTTP header names are case-insensitive).
 * A parameter whose name or `in` cannot be learned (an external `$ref`, a malformed entry)
 * is keyed by its `$ref`, or skipped when it has none: there is nothing a copilot could send.
 * The first of two parameters with the same key wins (as an HTTP request can carry it once).
 */
function parameterSummaries(doc: ApiDocument, parameters: readonly unknown[] | null): Map<string, ParameterSummary> {
  const out = new Map<string, ParameterSummary>();
  if (!Array.isArray(parameters)) return out;
  for (const written of parameters) {
    const parameter = resolveLocalRef(doc, written);
    let summary: ParameterSummary;
    let key: string;
    if (parameter && typeof parameter.name === 'string' && typeof parameter.in === 'string') {
      summary = { name: parameter.name, in: parameter.in, required: parameter.required === true || parameter.in === 'path' };
      key = parameterKey(parameter.name, parameter.in);
    } else if (isPlainObject(written) && typeof written.$ref === 'string') {
      summary = { name: written.$ref, in: '$ref', required: false };
      key = parameterKey(written.$ref, '$ref');
    } else {
      continue;
    }
    if (!out.has(key)) out.set(key, summary);
  }
  return out;
}

function parameterKey(name: string, location: string): string {
  return `${location}\u0000${location === 'header' ? name.toLowerCase() : name}`;
}

function requestBodyChanges(oldDoc: ApiDocument, old: Endpoint, newDoc: ApiDocument, next: Endpoint, change: Report): void {
  const was = requestBodyState(oldDoc, old.requestBody);
  const is = requestBodyState(newDoc, next.requestBody);
  if (was === null && is === null) return;
  if (was === null) {
    if (is!.required) change('request-body-added', true, 'a required request body was added: a copilot that sends none will be refused.', null, is);
    else change('request-body-added', false, 'an optional request body was added: a copilot may send it and works without it.', null, is);
  } else if (is === null) {
    change(
      'request-body-removed',
      false,
      'its request body was removed: a copilot that still sends one is normally not refused, but the body has no effect.',
      was,
      null,
    );
  } else if (!was.required && is.required) {
    change('request-body-made-required', true, 'its request body is now required: a copilot that sends none will be refused.', was, is);
  } else if (was.required && !is.required) {
    change('request-body-made-optional', false, 'its request body is now optional: a copilot that sends one still works.', was, is);
  }
}

/**
 * Null when the operation has no request body (absent, or a value that is not an object);
 * else whether it is required, read from the body or from what its local `$ref` points to
 * (a `$ref` that does not resolve is a body of unknown requirement: not required).
 */
function requestBodyState(doc: ApiDocument, requestBody: unknown): { required: boolean } | null {
  if (!isPlainObject(requestBody)) return null;
  const body = resolveLocalRef(doc, requestBody);
  return { required: body !== null && body.required === true };
}

function responseChanges(old: Endpoint, next: Endpoint, change: Report): void {
  const was = responseStatuses(old.responseBody);
  const is = responseStatuses(next.responseBody);
  for (const [status, written] of is) {
    if (!was.has(status))
      change('response-added', false, `the response ${written} was added: a copilot meets it only in new situations and can read it.`, null, written);
  }
  for (const [status, written] of was) {
    if (!is.has(status)) {
      change(
        'response-removed',
        true,
        `the response ${written} was removed: a copilot that relies on it (its content, or the case it signals) can no longer count on it.`,
        written,
        null,
      );
    }
  }
}

/** Status codes (`200`, `4XX`, `default`) compared in upper case, → as written; `x-` extension keys are not responses. */
function responseStatuses(responses: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!isPlainObject(responses)) return out;
  for (const status in responses) {
    if (status.startsWith('x-') || status.startsWith('X-')) continue;
    const key = status.toUpperCase();
    if (!out.has(key)) out.set(key, status);
  }
  return out;
}
