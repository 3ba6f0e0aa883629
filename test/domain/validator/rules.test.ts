import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDocument, RULE_IDS, validateDocument, type RuleFinding, type ValidationResult } from '../../../src/domain/validator/index.js';
import { readiness } from '../../../src/domain/validator/rules/index.js';
import { shorten } from '../../../src/domain/validator/rules/rule.js';
import { FIXTURES, fixture, source } from './helpers.js';
import { SPEC_FILES, SPECS_DIR } from '../../support/specs.js';

/**
 * The readiness rules (src/domain/validator/rules/): a case table per rule, each with a passing
 * document, a failing one and edge cases, in OpenAPI 3 and Swagger 2.0.
 */

const info = { title: 't', version: '1' };
const SERVER = [{ url: 'https://api.example.com' }];
/** An operation no text rule objects to. */
const good = (id: string, extra: Record<string, unknown> = {}) => ({ operationId: id, summary: `Do ${id}`, description: `Does ${id} to the thing.`, ...extra });

function oas3(paths: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { openapi: '3.0.3', info, servers: SERVER, paths, ...extra };
}
function swagger2(paths: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { swagger: '2.0', info, host: 'api.example.com', schemes: ['https'], paths, ...extra };
}
function validate(doc: unknown): ValidationResult {
  return validateDocument(parseDocument(source(JSON.stringify(doc), 'x.json')));
}
function findings(doc: unknown, rule?: string): RuleFinding[] {
  const all = validate(doc).validations.findings;
  return rule === undefined ? all : all.filter((f) => f.rule === rule);
}
const brief = (f: RuleFinding) => ({ endpoint: f.endpoint, pointer: f.pointer, severity: f.severity });

describe('the registry', () => {
  it('has every rule id the issue asks for, each once', () => {
    for (const id of [
      'operation-id-missing',
      'operation-id-invalid',
      'operation-id-too-long',
      'operation-id-duplicate',
      'summary-missing',
      'description-missing',
      'description-too-long',
      'parameter-description-too-long',
      'path-parameter-undeclared',
      'path-parameter-unused',
      'ref-unresolved',
      'ref-external',
      'server-missing',
      'server-relative',
      'server-insecure',
      'server-variable-undefined',
      'request-media-type-unsupported',
      'auth-unsupported',
      'too-many-tools',
      'header-parameter-unsupported',
      'descriptions-near-duplicate',
      // Beyond the list: what other readiness scores weigh (error responses, side effects, enums).
      'response-error-undocumented',
      'confirmation-missing',
      'confirmation-unneeded',
      'parameter-enum-missing',
      'operation-method-unsupported',
    ]) {
      expect(RULE_IDS).toContain(id);
    }
    expect(new Set(RULE_IDS).size).toBe(RULE_IDS.length);
  });

  it('a clean document has no finding and scores 100, ready everywhere', () => {
    for (const doc of [oas3({ '/a': { get: good('getA') } }), swagger2({ '/a': { get: good('getA') } })]) {
      const { validations } = validate(doc);
      expect(validations.findings).toEqual([]);
      expect(validations.readiness.score).toBe(100);
      expect(Object.values(validations.readiness.platforms).every((p) => p.ready && p.blocking === 0 && p.warnings === 0)).toBe(true);
      expect(validations.readiness.worst_endpoints).toEqual([]);
    }
  });

  it('only emits ids of the registry, with the documented key order', () => {
    const all = [
      ...findings(JSON.parse(fixture('validator/cases/operation-ids.json').bytes.toString())),
      ...findings(JSON.parse(fixture('specs/petstore3.json').bytes.toString())),
    ];
    expect(all.length).toBeGreaterThan(0);
    for (const f of all) {
      expect(RULE_IDS).toContain(f.rule);
      expect(Object.keys(f)).toEqual(['rule', 'severity', 'endpoint', 'pointer', 'message', 'platforms', 'fix']);
    }
  });
});

describe('operation-id-*', () => {
  it.each([
    ['getPetById', []],
    ['get_pet-by-id_2', []],
    ['x'.repeat(64), []],
    ['x'.repeat(65), ['operation-id-too-long:openai,gemini']],
    ['x'.repeat(129), ['operation-id-too-long:openai,anthropic,gemini,mcp']],
    ['get.pet', ['operation-id-invalid:openai,anthropic']], // gemini and mcp allow `.`
    ['get/pet', ['operation-id-invalid:openai,anthropic,gemini,mcp']],
    [' getPet ', ['operation-id-invalid:openai,anthropic,gemini,mcp']],
    ['1stPet', ['operation-id-invalid:gemini']], // gemini: a letter or _ first
    ['löschen', ['operation-id-invalid:openai,anthropic,gemini,mcp']],
  ])('%j → %j', (operationId, expected) => {
    const got = findings(oas3({ '/x': { get: good(operationId, { summary: 'Do it' }) } })).map((f) => `${f.rule}:${f.platforms.join(',')}`);
    expect(got).toEqual(expected);
  });

  it('invalid and too long propose one name valid everywhere', () => {
    const [f] = findings(oas3({ '/x': { get: good('get pet/by id') } }), 'operation-id-invalid');
    expect(f!.pointer).toBe('/paths/~1x/get/operationId');
    expect(f!.fix).toBe('get_pet_by_id');
    const [long] = findings(oas3({ '/x': { get: good('a'.repeat(70)) } }), 'operation-id-too-long');
    expect(long!.fix).toBe('a'.repeat(64));
  });

  it('missing: blank, absent or not a string, with a proposed id from method and path (Swagger 2.0 too)', () => {
    for (const make of [oas3, swagger2]) {
      const doc = make({
        '/pets/{petId}': {
          get: { summary: 's', description: 'd', parameters: [{ name: 'petId', in: 'path', required: true, type: 'string', schema: { type: 'string' } }] },
          put: { ...good(''), operationId: '  ' },
        },
      });
      const got = findings(doc, 'operation-id-missing');
      expect(got.map(brief)).toEqual([
        { endpoint: 0, pointer: '/paths/~1pets~1{petId}/get', severity: 'error' },
        { endpoint: 1, pointer: '/paths/~1pets~1{petId}/put', severity: 'error' },
      ]);
      expect(got.map((f) => f.fix)).toEqual(['get_pets_by_petId', 'put_pets_by_petId']);
      expect(got[0]!.platforms).toEqual(['gpt_actions']);
    }
  });

  it('a proposal never takes a name the document already uses', () => {
    const doc = oas3({ '/a': { get: good('get_a') }, '/a/': { get: { summary: 's', description: 'd' } } });
    expect(findings(doc, 'operation-id-missing')[0]!.fix).toBe('get_a_2');
  });

  it('duplicate: every endpoint sharing an id is an error; the second gets a new name', () => {
    for (const make of [oas3, swagger2]) {
      const got = findings(make({ '/a': { get: good('same') }, '/b': { get: good('other'), post: good('same') } }), 'operation-id-duplicate');
      expect(got.map(brief)).toEqual([
        { endpoint: 0, pointer: '/paths/~1a/get/operationId', severity: 'error' },
        { endpoint: 2, pointer: '/paths/~1b/post/operationId', severity: 'error' },
      ]);
      expect(got[0]!.fix).toBeNull();
      expect(got[1]!.fix).toBe('same_post');
      expect(got[0]!.platforms).toHaveLength(6);
    }
  });

  it('duplicate after sanitising or case folding: a warning, not an error', () => {
    const got = findings(
      oas3({ '/a': { get: good('getThing') }, '/b': { get: good('GetThing') }, '/c': { get: good('get.thing'), put: good('get_thing') } }),
      'operation-id-duplicate',
    );
    expect(got.map((f) => `${f.endpoint}:${f.severity}`)).toEqual(['0:warning', '1:warning', '2:warning', '3:warning']);
    expect(got[0]!.fix).toBeNull();
    expect(got[1]!.fix).not.toBeNull();
  });

  it('matches the operation-ids.json fixture', () => {
    const all = findings(JSON.parse(fixture('validator/cases/operation-ids.json').bytes.toString()));
    const at = (rule: string) => all.filter((f) => f.rule === rule).map((f) => f.endpoint);
    expect(at('operation-id-invalid')).toEqual([1, 6, 7, 8]);
    expect(at('operation-id-too-long')).toEqual([3]);
    expect(all.filter((f) => f.rule === 'operation-id-duplicate' && f.severity === 'error').map((f) => f.endpoint)).toEqual([0, 5, 6, 7]);
  });

  it('points into the referenced path item for a Path Item $ref', () => {
    const doc = oas3({ '/a': { get: good('bad id') }, '/b': { $ref: '#/paths/~1a' } });
    expect(findings(doc, 'operation-id-invalid').map((f) => f.pointer)).toEqual(['/paths/~1a/get/operationId', '/paths/~1a/get/operationId']);
  });
});

describe('computed texts read only the start of a long text', () => {
  // The definitions before the texts were collapsed only as far as needed: the whole text collapsed first.
  const referenceShorten = (text: string, max: number): string => {
    const t = text.trim().replace(/\s+/g, ' ');
    if (t.length <= max) return t;
    const head = t.slice(0, max);
    const sentence = Math.max(head.lastIndexOf('. '), head.lastIndexOf('! '), head.lastIndexOf('? '));
    if (sentence >= max / 2) return head.slice(0, sentence + 1);
    const room = t.slice(0, max - 1);
    const space = room.lastIndexOf(' ');
    return `${(space >= max / 2 ? room.slice(0, space) : room).replace(/[\s,;:.]+$/, '')}…`;
  };
  const referenceFirstSentence = (text: string, max: number): string => {
    const t = text.trim().replace(/\s+/g, ' ');
    const end = t.search(/[.!?](\s|$)/);
    return referenceShorten(end === -1 ? t : t.slice(0, end), max).replace(/[^\p{L}\p{N}]+$/u, '');
  };
  const texts = fc
    .array(fc.constantFrom('a', 'word', 'Lorem', ' ', '   ', '\n\t', '.', '. ', '!', '?', ',', 'x'.repeat(90), ' '.repeat(200)), { maxLength: 400 })
    .map((parts) => parts.join(''));

  it('shorten gives what collapsing the whole text gave (fast-check)', () => {
    fc.assert(
      fc.property(texts, fc.integer({ min: 2, max: 320 }), (text, max) => shorten(text, max) === referenceShorten(text, max)),
      { numRuns: 2000 },
    );
  });

  it('the summary proposed from a description is its first sentence as before (fast-check)', () => {
    // A full stop just past the summary's 80 characters that does not end the sentence.
    const edge = `${'a'.repeat(80)}.${'b'.repeat(200)}. More.`;
    const [found] = findings(oas3({ '/a': { get: { operationId: 'a', description: edge } } }), 'summary-missing');
    expect(found!.fix).toBe(referenceFirstSentence(edge, 80));
    fc.assert(
      fc.property(texts, (description) => {
        if (description.trim() === '') return true;
        const [found] = findings(oas3({ '/a': { get: { operationId: 'a', description } } }), 'summary-missing');
        const summary = referenceFirstSentence(description, 80);
        return found!.fix === (summary === '' || summary === description.trim() ? null : summary);
      }),
      { numRuns: 500 },
    );
  });
});

describe('summary and description', () => {
  it.each([
    ['both present and different', { summary: 'Get a', description: 'Gets an a.' }, []],
    ['no summary', { description: 'Gets an a. More.' }, ['summary-missing']],
    ['no description', { summary: 'Get a' }, ['description-missing']],
    ['neither', {}, ['summary-missing', 'description-missing']],
    ['blank ones', { summary: ' ', description: '\n' }, ['summary-missing', 'description-missing']],
    ['the same text', { summary: 'Get a', description: ' Get a ' }, ['summary-equals-description']],
    ['summary over 80', { summary: 'S'.repeat(81), description: 'd' }, ['summary-too-long']],
    ['description over 300', { summary: 's', description: 'D'.repeat(301) }, ['description-too-long']],
    ['description of exactly 300', { summary: 's', description: 'D'.repeat(300) }, []],
  ])('%s', (_label, fields, expected) => {
    for (const make of [oas3, swagger2]) {
      expect(findings(make({ '/a': { get: { operationId: 'getA', ...fields } } })).map((f) => f.rule)).toEqual(expected);
    }
  });

  it('proposes no summary that would repeat the description, nor an empty one (ritc.io: 66 such fixes only traded summary-missing for summary-equals-description)', () => {
    const proposed = (description: string) => findings(oas3({ '/a': { get: { operationId: 'a', description } } }), 'summary-missing')[0]!.fix;
    expect(proposed('Get all users')).toBeNull();
    expect(proposed(' Get all users \n')).toBeNull();
    expect(proposed('…')).toBeNull();
    expect(proposed('Get all users.')).toBe('Get all users');
    expect(proposed('Get all users. Paged.')).toBe('Get all users');
  });

  it('computes fixes: a summary from the first sentence, a shortened description', () => {
    const [summary] = findings(oas3({ '/a': { get: { operationId: 'a', description: 'Lists the pets. Paged by cursor.' } } }), 'summary-missing');
    expect(summary!.fix).toBe('Lists the pets');
    expect(summary!.platforms).toEqual(['copilot_studio']);
    const long = `${'word '.repeat(50)}End. ${'more '.repeat(40)}`;
    const [description] = findings(oas3({ '/a': { get: { operationId: 'a', summary: 's', description: long } } }), 'description-too-long');
    expect(description!.pointer).toBe('/paths/~1a/get/description');
    expect((description!.fix as string).length).toBeLessThanOrEqual(300);
    expect(description!.fix).toMatch(/End\.$/);
  });

  it('summary over 300 is an error for GPT Actions too', () => {
    const [f] = findings(oas3({ '/a': { get: good('a', { summary: 'S'.repeat(301) }) } }), 'summary-too-long');
    expect(f!.severity).toBe('error');
    expect(f!.platforms).toEqual(['gpt_actions', 'copilot_studio']);
  });
});

describe('parameters', () => {
  const pathParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };

  it('path-parameter-undeclared: in the template, not declared (a fix is the parameter)', () => {
    const got = findings(oas3({ '/a/{id}': { get: good('a') } }), 'path-parameter-undeclared');
    expect(got.map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a~1{id}/get', severity: 'error' }]);
    expect(got[0]!.fix).toEqual(pathParam);
    const two = findings(swagger2({ '/a/{id}': { get: good('a') } }), 'path-parameter-undeclared');
    expect(two[0]!.fix).toEqual({ name: 'id', in: 'path', required: true, type: 'string' });
  });

  it('passes a path parameter declared at path level, in the operation, or by $ref', () => {
    expect(findings(oas3({ '/a/{id}': { parameters: [pathParam], get: good('a') } })).map((f) => f.rule)).toEqual([]);
    expect(findings(oas3({ '/a/{id}': { get: good('a', { parameters: [pathParam] }) } })).map((f) => f.rule)).toEqual([]);
    const byRef = oas3(
      { '/a/{id}': { get: good('a', { parameters: [{ $ref: '#/components/parameters/Id' }] }) } },
      { components: { parameters: { Id: pathParam } } },
    );
    expect(findings(byRef)).toEqual([]);
    const byRef2 = swagger2(
      { '/a/{id}': { get: good('a', { parameters: [{ $ref: '#/parameters/Id' }] }) } },
      { parameters: { Id: { name: 'id', in: 'path', required: true, type: 'string' } } },
    );
    expect(findings(byRef2)).toEqual([]);
  });

  it('path-parameter-unused: declared in: path, not in the template; a shared one is reported once', () => {
    const got = findings(oas3({ '/a': { parameters: [pathParam], get: good('a'), put: good('b') } }), 'path-parameter-unused');
    expect(got.map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/parameters/0', severity: 'warning' }]);
  });

  it('parameter-description-too-long: over 700, pointer at the $ref target when referenced, fix ≤ 700', () => {
    const long = { name: 'q', in: 'query', description: 'x '.repeat(400), schema: { type: 'string' } };
    const direct = findings(oas3({ '/a': { get: good('a', { parameters: [long] }) } }), 'parameter-description-too-long');
    expect(direct.map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/get/parameters/0/description', severity: 'error' }]);
    expect((direct[0]!.fix as string).length).toBeLessThanOrEqual(700);
    const doc = swagger2(
      { '/a': { get: good('a', { parameters: [{ $ref: '#/parameters/Q' }] }), put: good('b', { parameters: [{ $ref: '#/parameters/Q' }] }) } },
      { parameters: { Q: { ...long, type: 'string' } } },
    );
    expect(findings(doc, 'parameter-description-too-long').map(brief)).toEqual([{ endpoint: 0, pointer: '/parameters/Q/description', severity: 'error' }]);
    expect(findings(oas3({ '/a': { get: good('a', { parameters: [{ ...long, description: 'x'.repeat(700) }] }) } }), 'parameter-description-too-long')).toEqual(
      [],
    );
  });

  it('parameter-description-too-long: a description written out in every operation gets the same fix in each', () => {
    // Kubernetes writes its long `fieldSelector` parameter inline in every operation: one fix, computed once.
    const text = `${'Select objects by field. '.repeat(40)}End.`;
    const inline = () => ({ name: 'fieldSelector', in: 'query', description: text, schema: { type: 'string' } });
    const paths = Object.fromEntries(['/a', '/b', '/c'].map((p) => [p, { get: good(`list${p.slice(1)}`, { parameters: [inline()] }) }]));
    const got = findings(oas3(paths), 'parameter-description-too-long');
    expect(got.map((f) => f.endpoint)).toEqual([0, 1, 2]);
    expect(got.map((f) => f.fix)).toEqual([shorten(text, 700), shorten(text, 700), shorten(text, 700)]);
  });

  it('header-parameter-unsupported: custom headers, not Accept/Content-Type/Authorization', () => {
    const headers = ['X-Trace', 'Accept', 'content-type', 'Authorization'].map((name) => ({ name, in: 'header', schema: { type: 'string' } }));
    const got = findings(oas3({ '/a': { get: good('a', { parameters: headers }) } }), 'header-parameter-unsupported');
    expect(got.map((f) => f.pointer)).toEqual(['/paths/~1a/get/parameters/0']);
    expect(got[0]!.platforms).toEqual(['gpt_actions']);
  });

  it('parameter-name-invalid: Gemini argument names', () => {
    const params = ['ok_name', 'page[size]', 'X-Trace', '_x', '9lives'].map((name) => ({ name, in: 'query', type: 'string' }));
    const got = findings(swagger2({ '/a': { get: good('a', { parameters: params }) } }), 'parameter-name-invalid');
    expect(got.map((f) => f.pointer)).toEqual(['/paths/~1a/get/parameters/1/name', '/paths/~1a/get/parameters/2/name', '/paths/~1a/get/parameters/4/name']);
    expect(got[0]!.platforms).toEqual(['gemini']);
  });

  it('a name written in many operations is one finding (parameter-name-invalid, header-parameter-unsupported), at the first, counting them', () => {
    // Microsoft Graph writes OData's $select inline in 3,969 operations, If-Match in 1,462.
    const select = () => ({ name: '$select', in: 'query', schema: { type: 'string' } });
    const paths: Record<string, unknown> = {};
    for (let k = 0; k < 8; k++) {
      // HTTP reads header names in any case: one header (and a valid Gemini name).
      const header = { name: k % 2 === 0 ? 'If_Match' : 'if_match', in: 'header', schema: { type: 'string' } };
      paths[`/r${k}`] = { get: good(`get${k}`, { parameters: k === 3 ? [] : [select(), header] }) };
    }
    paths['/s'] = { get: good('gets', { parameters: [{ name: '$top', in: 'query', schema: { type: 'integer' } }] }) };
    const doc = oas3(paths);
    const names = findings(doc, 'parameter-name-invalid');
    expect(names.map(brief)).toEqual([
      { endpoint: 0, pointer: '/paths/~1r0/get/parameters/0/name', severity: 'warning' },
      { endpoint: 8, pointer: '/paths/~1s/get/parameters/0/name', severity: 'warning' },
    ]);
    expect(names[0]!.message).toBe(
      'Parameter name “$select” (written 7 times, at endpoints 0, 1, 2, 4, 5 and 2 more) is not a valid Gemini argument name (a letter or _, then letters, digits, _; at most 64): a converter must rename it.',
    );
    expect(names[1]!.message).toBe(
      'Parameter name “$top” is not a valid Gemini argument name (a letter or _, then letters, digits, _; at most 64): a converter must rename it.',
    );
    const headers = findings(doc, 'header-parameter-unsupported');
    expect(headers.map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1r0/get/parameters/1', severity: 'error' }]);
    expect(headers[0]!.message).toBe(
      'Header parameter “If_Match” (written 7 times, at endpoints 0, 1, 2, 4, 5 and 2 more): GPT Actions cannot send custom headers, so the model cannot set it.',
    );
    // Twice: both endpoints named, no "more".
    const two = findings(oas3({ '/a': { get: good('a', { parameters: [select()] }), put: good('b', { parameters: [select()] }) } }), 'parameter-name-invalid');
    expect(two).toHaveLength(1);
    expect(two[0]!.message).toContain('(written 2 times, at endpoints 0, 1)');
    // A parameter shared by a path item's operations (or a $ref) is written once: checked once,
    // as before; a copy elsewhere counts. One endpoint writing two copies is named once.
    const tenant = { name: 'X-Tenant', in: 'header', schema: { type: 'string' } };
    const shared = oas3({
      '/a': { parameters: [tenant], get: good('a'), put: good('b'), post: good('c') },
      '/b': {
        get: good('d', {
          parameters: [
            { ...tenant, name: 'x-tenant' },
            { ...tenant, name: 'X-TENANT', in: 'header' },
          ],
        }),
      },
    });
    const sharedHeaders = findings(shared, 'header-parameter-unsupported');
    expect(sharedHeaders.map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/parameters/0', severity: 'error' }]);
    expect(sharedHeaders[0]!.message).toContain('“X-Tenant” (written 3 times, at endpoints 0, 3):');
    // Gemini's names are case-sensitive: three names, each written once.
    expect(findings(shared, 'parameter-name-invalid').map((f) => f.pointer)).toEqual([
      '/paths/~1a/parameters/0/name',
      '/paths/~1b/get/parameters/0/name',
      '/paths/~1b/get/parameters/1/name',
    ]);
    // The readiness count follows: one warning for Gemini per name, one blocking finding for GPT Actions.
    const r = validate(doc).validations.readiness!;
    expect(r.platforms.gemini.warnings).toBe(2);
    expect(r.platforms.gpt_actions.blocking).toBe(1);
  });
});

describe('ref-unresolved and ref-external', () => {
  it('reports each distinct bad $ref once, at its first use, with its endpoint', () => {
    const doc = oas3(
      {
        '/a': {
          get: good('a', { responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Nope' } } } } } }),
        },
        '/b': { get: good('b', { responses: { 200: { $ref: '#/components/schemas/Nope' }, 400: { $ref: 'other.yaml#/Err' } } }) },
      },
      { components: { schemas: { Ok: { type: 'object', properties: { n: { $ref: '#/components/schemas/Missing2' } } } } } },
    );
    expect(findings(doc, 'ref-unresolved').map(brief)).toEqual([
      { endpoint: 0, pointer: '/paths/~1a/get/responses/200/content/application~1json/schema/$ref', severity: 'error' },
      { endpoint: null, pointer: '/components/schemas/Ok/properties/n/$ref', severity: 'error' },
    ]);
    expect(findings(doc, 'ref-external').map(brief)).toEqual([{ endpoint: 1, pointer: '/paths/~1b/get/responses/400/$ref', severity: 'warning' }]);
  });

  it('passes resolving refs, #anchors, and $ref-looking data in examples and x- extensions', () => {
    const doc = oas3(
      {
        '/a': {
          get: good('a', {
            'x-note': { $ref: '#/nowhere' },
            responses: {
              200: { description: 'ok', content: { 'application/json': { example: { $ref: '#/nowhere' }, schema: { $ref: '#/components/schemas/Ok' } } } },
            },
          }),
        },
      },
      { components: { schemas: { Ok: { $ref: '#anchor' } } } },
    );
    expect(findings(doc).filter((f) => f.rule.startsWith('ref-'))).toEqual([]);
  });

  it('Swagger 2.0 definitions', () => {
    const doc = swagger2({ '/a': { get: good('a', { responses: { 200: { description: 'ok', schema: { $ref: '#/definitions/Gone' } } } }) } });
    expect(findings(doc, 'ref-unresolved').map((f) => f.pointer)).toEqual(['/paths/~1a/get/responses/200/schema/$ref']);
  });

  it('finds them on a document not parsed here (no refs gathered while parsing)', () => {
    const doc = oas3({ '/a': { get: good('a', { parameters: [{ $ref: '#/components/parameters/Gone' }] }) } });
    expect(validateDocument(doc).validations.findings.map((f) => f.rule)).toEqual(['ref-unresolved']);
  });
});

describe('servers', () => {
  it.each([
    ['https, no port', oas3({}), []],
    ['https on 443', oas3({}, { servers: [{ url: 'https://a.example:443/v1' }] }), []],
    ['no servers', oas3({}, { servers: undefined }), ['server-missing:/servers']],
    ['empty url', oas3({}, { servers: [{ url: '' }] }), ['server-missing:/servers/0/url']],
    ['relative', oas3({}, { servers: [{ url: '/v1' }] }), ['server-relative:/servers/0/url']],
    ['http', oas3({}, { servers: [{ url: 'http://a.example' }] }), ['server-insecure:/servers/0/url']],
    ['other port', oas3({}, { servers: [{ url: 'https://a.example:8443' }] }), ['server-insecure:/servers/0/url']],
    ['variable with default', oas3({}, { servers: [{ url: 'https://{region}.example', variables: { region: { default: 'eu' } } }] }), []],
    ['variable undefined', oas3({}, { servers: [{ url: 'https://{region}.example' }] }), ['server-variable-undefined:/servers/0/url']],
    ['second server variable undefined', oas3({}, { servers: [SERVER[0], { url: 'https://{x}.example' }] }), ['server-variable-undefined:/servers/1/url']],
    ['swagger: https host', swagger2({}), []],
    ['swagger: no host', swagger2({}, { host: undefined }), ['server-missing:/host']],
    ['swagger: no schemes (https)', swagger2({}, { schemes: undefined }), []],
    ['swagger: http first', swagger2({}, { schemes: ['http', 'https'] }), ['server-insecure:/schemes']],
    ['swagger: port', swagger2({}, { host: 'api.example.com:8080' }), ['server-insecure:/host']],
  ])('%s', (_label, doc, expected) => {
    expect(findings(doc).map((f) => `${f.rule}:${f.pointer}`)).toEqual(expected);
  });

  it('fixes: the HTTPS URL (from Swagger 2.0 host, basePath, schemes)', () => {
    expect(findings(oas3({}, { servers: [{ url: 'http://a.example:8080/v1' }] }))[0]!.fix).toBe('https://a.example/v1');
    expect(findings(swagger2({}, { schemes: ['http'], basePath: '/v2' }))[0]!.fix).toBe('https://api.example.com/v2');
    expect(findings(swagger2({}, { host: 'api.example.com:8080', basePath: '/v2' }))[0]!.fix).toBe('https://api.example.com/v2');
  });

  it('fixes: a server variable without a default gets its first enum value (the default must be one of them), else ""', () => {
    const variables = { region: { enum: [7, 'eu', 'us'], description: 'Region' } };
    expect(findings(oas3({}, { servers: [{ url: 'https://{region}.example', variables }] }))[0]!.fix).toEqual({ region: { default: 'eu' } });
    expect(findings(oas3({}, { servers: [{ url: 'https://{region}.example' }] }))[0]!.fix).toEqual({ region: { default: '' } });
  });

  it('server-missing blocks every platform', () => {
    const { validations } = validate(oas3({ '/a': { get: good('a') } }, { servers: [] }));
    expect(Object.values(validations.readiness.platforms).map((p) => p.ready)).toEqual([false, false, false, false, false, false]);
  });
});

describe('response-error-undocumented (the model cannot tell why a call failed)', () => {
  const responses = (...codes: string[]) => Object.fromEntries(codes.map((c) => [c, { description: c }]));
  it.each([
    ['a 4xx', ['200', '404'], false],
    ['a 5xx', ['201', '503'], false],
    ['a range', ['200', '4XX'], false],
    ['default', ['200', 'default'], false],
    ['only success', ['200', '204'], true],
    ['only a redirect', ['302'], true],
  ])('%s', (_name, codes, flagged) => {
    // Beside another operation that documents an error, so the finding is the operation's own.
    for (const doc of [
      oas3({ '/a': { get: good('a', { responses: responses(...codes) }) }, '/b': { get: good('b', { responses: responses('200', '400') }) } }),
      swagger2({ '/a': { get: good('a', { responses: responses(...codes) }) }, '/b': { get: good('b', { responses: responses('200', '400') }) } }),
    ]) {
      const got = findings(doc, 'response-error-undocumented');
      expect(got.map(brief)).toEqual(flagged ? [{ endpoint: 0, pointer: '/paths/~1a/get/responses', severity: 'info' }] : []);
      if (flagged) expect(got[0]!.platforms).toEqual(['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio']);
    }
  });

  it('one finding on the document when no operation documents an error', () => {
    const doc = oas3({ '/a': { get: good('a', { responses: responses('200') }), post: good('b', { responses: responses('201') }) } });
    expect(findings(doc, 'response-error-undocumented').map(brief)).toEqual([{ endpoint: null, pointer: '/paths', severity: 'info' }]);
    // An info finding costs the document a point: the score still rounds to 100, and no platform's verdict changes.
    const { readiness: r } = validate(doc).validations;
    expect(r.score).toBe(100);
    expect(Object.values(r.platforms).every((p) => p.ready && p.warnings === 0)).toBe(true);
  });

  it('leaves out operations that document no response, and x- keys are not responses', () => {
    expect(findings(oas3({ '/a': { get: good('a') } }), 'response-error-undocumented')).toEqual([]);
    expect(findings(oas3({ '/a': { get: good('a', { responses: { 'x-note': 'n' } }) } }), 'response-error-undocumented')).toEqual([]);
    const mixed = oas3({
      '/a': { get: good('a', { responses: { '200': { description: 'ok' }, 'x-note': 'n' } }) },
      '/b': { get: good('b', { responses: responses('200', '500') }) },
    });
    expect(findings(mixed, 'response-error-undocumented').map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/get/responses', severity: 'info' }]);
  });
});

describe('confirmation-missing and confirmation-unneeded (GPT Actions: x-openai-isConsequential)', () => {
  it.each([
    ['GET deleteUser', 'get', 'deleteUser', '/users/{id}', 'confirmation-missing'],
    ['GET users_delete (the verb last)', 'get', 'users_delete', '/users/{id}', 'confirmation-missing'],
    ['GET drive.files.delete', 'get', 'drive.files.delete', '/files/{id}', 'confirmation-missing'],
    ['GET /orders/{id}/cancel', 'get', 'ordersCancelled', '/orders/{id}/cancel', 'confirmation-missing'],
    ['GET /{name}:cancel (a custom method)', 'get', null, '/v1/{name}:cancel', 'confirmation-missing'],
    ['GET /user/logout', 'get', 'logoutUser', '/user/logout', 'confirmation-missing'],
    ['GET getOrderById', 'get', 'getOrderById', '/store/order/{orderId}', null],
    ['GET /store/order (a noun, not a verb)', 'get', null, '/store/order', null],
    ['GET getStoreOrder (get is its verb)', 'get', 'getStoreOrder', '/orders', null],
    ['GET listDeletedItems', 'get', 'listDeletedItems', '/items/deleted', null],
    ['GET SyncMembers_Get (Azure: the verb after _)', 'get', 'SyncMembers_Get', '/syncMembers/{name}', null],
    ['GET Databases_Delete (Azure)', 'get', 'Databases_Delete', '/databases/{name}', 'confirmation-missing'],
    ['GET OrderInfo (order is a noun)', 'get', 'OrderInfo', '/order.info.json', null],
    ['GET GET_AddPermission (AWS: the method, then the verb)', 'get', 'GET_AddPermission', '/queue', 'confirmation-missing'],
    ['GET droplets_get_DestroyStatus (the first verb)', 'get', 'droplets_get_DestroyStatus', '/droplets/{id}/destroy/status', null],
    ['GET app.invitations.list at /invite (the id’s verb wins over the path)', 'get', 'app.invitations.list', '/apps/{id}/invite', null],
    ['GET GET_upload-tokens (upload is a noun here)', 'get', 'GET_upload-tokens', '/upload-tokens', null],
    ['GET repos/download-tarball-archive', 'get', 'repos/download-tarball-archive', '/repos/{owner}/{repo}/tarball/{ref}', null],
    ['POST searchPets', 'post', 'searchPets', '/pets/search', 'confirmation-unneeded'],
    ['POST /query', 'post', null, '/query', 'confirmation-unneeded'],
    ['POST pets.list', 'post', 'pets.list', '/pets.list', 'confirmation-unneeded'],
    ['POST createPet', 'post', 'createPet', '/pets', null],
    ['POST admin_conversations_convertToPrivate (a change)', 'post', 'admin_conversations_convertToPrivate', '/admin.conversations.convertToPrivate', null],
    ['POST /notifications/read (marks them read)', 'post', null, '/notifications/read', null],
    ['POST listAndDelete (a change wins)', 'post', 'searchThenDelete', '/items/delete', null],
    ['PUT updatePet', 'put', 'updatePet', '/pets/{id}', null],
    ['DELETE searchIndex (not GET or POST)', 'delete', 'searchIndex', '/index', null],
  ])('%s', (_name, method, id, path, rule) => {
    const operation = { summary: 'Do it', description: 'Does it to the thing.', ...(id !== null && { operationId: id }) };
    const parameters = path.includes('{')
      ? [...path.matchAll(/\{([^}:]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }))
      : [];
    const doc = oas3({ [path]: { [method]: { ...operation, ...(parameters.length > 0 && { parameters }) } } });
    const got = findings(doc).filter((f) => f.rule.startsWith('confirmation-'));
    expect(got.map((f) => f.rule)).toEqual(rule === null ? [] : [rule]);
    if (rule === null) return;
    expect(got[0]!).toMatchObject({
      endpoint: 0,
      pointer: `/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method}`,
      severity: rule === 'confirmation-missing' ? 'warning' : 'info',
      platforms: ['gpt_actions'],
      fix: rule === 'confirmation-missing',
    });
  });

  it('never second-guesses an explicit x-openai-isConsequential, and reads Swagger 2.0 alike', () => {
    const get = { ...good('deleteUser'), 'x-openai-isConsequential': true };
    const post = { ...good('searchPets'), 'x-openai-isConsequential': false };
    expect(findings(oas3({ '/a': { get }, '/b': { post } })).filter((f) => f.rule.startsWith('confirmation-'))).toEqual([]);
    // The other value is what the rule proposes: still flagged.
    const wrong = oas3({ '/a': { get: { ...get, 'x-openai-isConsequential': false } }, '/b': { post: { ...post, 'x-openai-isConsequential': true } } });
    expect(
      findings(wrong)
        .filter((f) => f.rule.startsWith('confirmation-'))
        .map((f) => f.rule),
    ).toEqual(['confirmation-missing', 'confirmation-unneeded']);
    const two = swagger2({ '/a': { get: good('deleteUser') }, '/b': { post: good('searchPets') } });
    expect(
      findings(two)
        .filter((f) => f.rule.startsWith('confirmation-'))
        .map(brief),
    ).toEqual([
      { endpoint: 0, pointer: '/paths/~1a/get', severity: 'warning' },
      { endpoint: 1, pointer: '/paths/~1b/post', severity: 'info' },
    ]);
  });

  it('a GET that changes something blocks no platform but warns GPT Actions', () => {
    const { readiness: r } = validate(oas3({ '/a': { get: good('deleteUser') } })).validations;
    expect(r.platforms.gpt_actions).toEqual({ ready: true, blocking: 0, warnings: 1 });
    expect(r.platforms.openai).toEqual({ ready: true, blocking: 0, warnings: 0 });
  });
});

describe('parameter-enum-missing (the description lists the values, the schema has no enum)', () => {
  const param = (description: string, schema: Record<string, unknown> = { type: 'string' }) => ({ name: 'sort', in: 'query', description, schema });
  it.each([
    ['backticked values', 'Possible values are `asc` and `desc`. Default `asc`.'],
    ['quoted values', 'Must be one of "new", "old" or "all".'],
    ['a bare list in parentheses', 'The level (one of org, private, public).'],
    ['values listed elsewhere', 'Valid values are listed on the sorting page.'],
  ])('%s', (_name, description) => {
    const got = findings(oas3({ '/a': { get: good('a', { parameters: [param(description)] }) } }), 'parameter-enum-missing');
    expect(got.map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/get/parameters/0', severity: 'info' }]);
    // No fix: values read from descriptions were too often not the whole value (bench/README.md).
    expect(got[0]!.fix).toBeNull();
    // Swagger 2.0: the type on the parameter itself.
    const two = findings(
      swagger2({ '/a': { get: good('a', { parameters: [{ name: 'sort', in: 'query', type: 'string', description }] }) } }),
      'parameter-enum-missing',
    );
    expect(two.map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/get/parameters/0', severity: 'info' }]);
  });

  it.each([
    ['an enum already', param('One of `asc`, `desc`.', { type: 'string', enum: ['asc', 'desc'] })],
    ['not a string', param('One of `1`, `2`.', { type: 'integer' })],
    ['no list of values', param('The sort order; the server picks one of the fields.')],
    ['"one of the …" is not a list', param('Limits the results to the columns of one of the end points.')],
    ['"can be either the ID or the ARN" names kinds of value', param('The identifier. Can be either the ID or the ARN.')],
  ])('not on %s', (_name, p) => {
    expect(findings(oas3({ '/a': { get: good('a', { parameters: [p] }) } }), 'parameter-enum-missing')).toEqual([]);
  });

  it('reads a referenced schema', () => {
    const doc = oas3(
      { '/a': { get: good('a', { parameters: [param('One of `asc`, `desc`.', { $ref: '#/components/schemas/Order' } as never)] }) } },
      { components: { schemas: { Order: { type: 'string' } } } },
    );
    expect(findings(doc, 'parameter-enum-missing').map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/get/parameters/0', severity: 'info' }]);
    const withEnum = oas3(
      { '/a': { get: good('a', { parameters: [param('One of `asc`, `desc`.', { $ref: '#/components/schemas/Order' } as never)] }) } },
      { components: { schemas: { Order: { type: 'string', enum: ['asc', 'desc'] } } } },
    );
    expect(findings(withEnum, 'parameter-enum-missing')).toEqual([]);
  });
});

describe('response-unbounded (GPT Actions: payloads under 100,000 characters)', () => {
  const list = { type: 'array', items: { type: 'string' } };
  const ok = (schema: unknown) => ({ '200': { description: 'ok', content: { 'application/json': { schema } } } });
  const limit = { name: 'limit', in: 'query', schema: { type: 'integer' } };
  it.each([
    ['a bare list', list, [], true],
    ['a list with maxItems', { ...list, maxItems: 50 }, [], false],
    ['an envelope {data: [...]}', { type: 'object', properties: { data: list } }, [], true],
    ['a list bounded by a limit parameter', list, [limit], false],
    ['a list bounded by per_page', list, [{ name: 'per_page', in: 'query', schema: { type: 'integer' } }], false],
    ['an object', { type: 'object', properties: { id: { type: 'string' } } }, [], false],
    ['an object with an array field (a pet’s photoUrls)', { type: 'object', properties: { id: { type: 'string' }, photoUrls: list } }, [], false],
    ['an OData envelope {value: [...]}', { type: 'object', properties: { value: list, '@odata.nextLink': { type: 'string' } } }, [], true],
  ])('%s', (_name, schema, parameters, flagged) => {
    const got = findings(oas3({ '/a': { get: good('a', { parameters, responses: ok(schema) }) } }), 'response-unbounded');
    expect(got.map(brief)).toEqual(flagged ? [{ endpoint: 0, pointer: '/paths/~1a/get/responses/200/content/application~1json', severity: 'warning' }] : []);
    if (flagged) expect(got[0]!.platforms).toEqual(['gpt_actions']);
  });

  it.each([
    ['a 200 beside errors', { '404': {}, '200': 'list', default: {} }, '200'],
    ['a 201 (no 200) beside a 400', { '400': {}, '201': 'list' }, '201'],
    ['a 200 written after a 201', { '201': 'object', '200': 'list', '400': {} }, '200'],
    ['the least 2xx code, whatever the order written', { '206': 'object', '204': 'list', '400': {} }, '204'],
    ['a code past the common ones', { '299': 'list', '500': {} }, '299'],
    ['a code before a range', { '2XX': 'object', '250': 'list' }, '250'],
    ['a range alone', { '2XX': 'list', '4XX': {} }, '2XX'],
    ['default when no 2xx', { default: 'list', '404': {} }, 'default'],
    ['no 2xx and no default', { '404': 'list' }, null],
  ])('reads the success response: %s', (_name, written, status) => {
    // 'list' is a response whose schema is an unbounded list; 'object' one whose schema is an object.
    const schemaOf = (v: unknown) => (v === 'list' ? list : { type: 'object' });
    const responses = Object.fromEntries(
      Object.entries(written).map(([code, v]) => [code, typeof v === 'string' ? ok(schemaOf(v))['200'] : { description: 'error' }]),
    );
    const got = findings(oas3({ '/a': { get: good('a', { responses }) } }), 'response-unbounded');
    expect(got.map((f) => f.pointer)).toEqual(status === null ? [] : [`/paths/~1a/get/responses/${status}/content/application~1json`]);
  });

  it('a schema shared by several operations is judged for each (bounded by a parameter in one, not in the other; an object in both)', () => {
    const doc = oas3(
      {
        '/a': { get: good('a', { responses: ok({ $ref: '#/components/schemas/Pets' }) }) },
        '/b': { get: good('b', { parameters: [limit], responses: ok({ $ref: '#/components/schemas/Pets' }) }) },
        '/c': { get: good('c', { responses: ok({ $ref: '#/components/schemas/Pets' }) }) },
        '/d': { get: good('d', { responses: ok({ $ref: '#/components/schemas/Pet' }) }) },
        '/e': { get: good('e', { responses: ok({ $ref: '#/components/schemas/Pet' }) }) },
      },
      { components: { schemas: { Pets: { type: 'object', properties: { items: list } }, Pet: { type: 'object', properties: { tags: list } } } } },
    );
    expect(findings(doc, 'response-unbounded').map((f) => f.endpoint)).toEqual([0, 2]);
  });

  it('follows $refs (a response, a schema, a parameter) and Swagger 2.0', () => {
    const doc = oas3(
      {
        '/a': { get: good('a', { responses: { '200': { $ref: '#/components/responses/Many' } } }) },
        '/b': { get: good('b', { parameters: [{ $ref: '#/components/parameters/Top' }], responses: ok({ $ref: '#/components/schemas/Pets' }) }) },
      },
      {
        components: {
          responses: { Many: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Pets' } } } } },
          schemas: { Pets: { type: 'array', items: { type: 'object' } } },
          parameters: { Top: { name: '$top', in: 'query', schema: { type: 'integer' } } },
        },
      },
    );
    expect(findings(doc, 'response-unbounded').map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/get/responses/200', severity: 'warning' }]);
    const two = swagger2({ '/a': { get: good('a', { responses: { '200': { description: 'ok', schema: { type: 'array', items: {} } } } }) } });
    expect(findings(two, 'response-unbounded').map(brief)).toEqual([{ endpoint: 0, pointer: '/paths/~1a/get/responses/200', severity: 'warning' }]);
  });
});

describe('request-media-type-unsupported', () => {
  const body = (...types: string[]) => ({ content: Object.fromEntries(types.map((t) => [t, { schema: { type: 'object' } }])) });
  it.each([
    [['application/json'], false],
    [['application/merge-patch+json'], false],
    [['application/json; charset=utf-8'], false],
    [['application/x-www-form-urlencoded'], false],
    [['application/xml', 'application/json'], false],
    [['application/xml'], true],
    [['multipart/form-data'], true],
    [['application/octet-stream'], true],
  ])('%j → %s', (types, flagged) => {
    const got = findings(oas3({ '/a': { post: good('a', { requestBody: body(...types) }) } }), 'request-media-type-unsupported');
    expect(got.map((f) => f.pointer)).toEqual(flagged ? ['/paths/~1a/post/requestBody/content'] : []);
  });

  it('a request body given by $ref points where its media types are written (the pointer through the $ref named nothing: 6-dot-authentiqio)', () => {
    const doc = oas3(
      { '/a': { post: good('a', { requestBody: { $ref: '#/components/requestBodies/Key' } }) } },
      { components: { requestBodies: { Key: body('application/jose') } } },
    );
    expect(findings(doc, 'request-media-type-unsupported').map((f) => f.pointer)).toEqual(['/components/requestBodies/Key/content']);
  });

  it('Swagger 2.0: a file upload (formData) and an XML-only body', () => {
    const file = swagger2({ '/a': { post: good('a', { consumes: ['multipart/form-data'], parameters: [{ name: 'f', in: 'formData', type: 'file' }] }) } });
    expect(findings(file, 'request-media-type-unsupported').map((f) => f.pointer)).toEqual(['/paths/~1a/post/consumes']);
    const xml = swagger2(
      { '/a': { post: good('a', { parameters: [{ name: 'b', in: 'body', schema: { type: 'object' } }] }) } },
      { consumes: ['application/xml'] },
    );
    expect(findings(xml, 'request-media-type-unsupported').map((f) => f.pointer)).toEqual(['/paths/~1a/post']);
    const json = swagger2({ '/a': { post: good('a', { parameters: [{ name: 'b', in: 'body', schema: { type: 'object' } }] }) } });
    expect(findings(json, 'request-media-type-unsupported')).toEqual([]);
  });
});

describe('auth-unsupported', () => {
  const schemes = (s: Record<string, unknown>, security: unknown[]) => oas3({ '/a': { get: good('a') } }, { components: { securitySchemes: s }, security });
  it.each([
    ['API key in a header', { k: { type: 'apiKey', in: 'header', name: 'X-Key' } }, [{ k: [] }], []],
    ['bearer', { b: { type: 'http', scheme: 'bearer' } }, [{ b: [] }], []],
    ['OAuth and none', { o: { type: 'oauth2', flows: {} } }, [{ o: [] }, {}], []],
    ['declared, not applied', { c: { type: 'apiKey', in: 'cookie', name: 'sid' } }, [], []],
    ['API key in a cookie', { c: { type: 'apiKey', in: 'cookie', name: 'sid' } }, [{ c: [] }], ['/components/securitySchemes/c']],
    ['mutual TLS', { m: { type: 'mutualTLS' } }, [{ m: [] }], ['/components/securitySchemes/m']],
    ['digest', { d: { type: 'http', scheme: 'digest' } }, [{ d: [] }], ['/components/securitySchemes/d']],
    [
      'two required together',
      { k: { type: 'apiKey', in: 'header', name: 'X' }, l: { type: 'apiKey', in: 'query', name: 'y' } },
      [{ k: [], l: [] }],
      ['/security/0'],
    ],
    [
      'two auth types',
      { k: { type: 'apiKey', in: 'header', name: 'X' }, o: { type: 'oauth2', flows: {} } },
      [{ k: [] }, { o: [] }],
      ['/components/securitySchemes/o'],
    ],
  ])('%s', (_label, s, security, pointers) => {
    const got = findings(schemes(s, security), 'auth-unsupported');
    expect(got.map((f) => f.pointer)).toEqual(pointers);
    for (const f of got) expect(f.platforms).toEqual(['gpt_actions']);
  });

  it('operation-level security and Swagger 2.0 basic', () => {
    const doc = swagger2({ '/a': { get: good('a', { security: [{ b: [] }] }) } }, { securityDefinitions: { b: { type: 'basic' } } });
    expect(findings(doc, 'auth-unsupported')).toEqual([]);
    const cookie = oas3(
      { '/a': { get: good('a', { security: [{ c: [] }] }) } },
      { components: { securitySchemes: { c: { type: 'apiKey', in: 'cookie', name: 's' } } } },
    );
    expect(findings(cookie, 'auth-unsupported').map(brief)).toEqual([{ endpoint: 0, pointer: '/components/securitySchemes/c', severity: 'error' }]);
  });
});

describe('too-many-tools', () => {
  const many = (n: number) =>
    Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`/r${i}`, { get: good(`get${i}`, { summary: `Get r${i}`, description: `Gets resource number ${i}.` }) }]),
    );
  it.each([
    [30, null],
    [31, 'warning'],
    [128, 'warning'],
    [129, 'error'],
  ])('%i operations → %s', (n, severity) => {
    const got = findings(oas3(many(n)), 'too-many-tools');
    expect(got.map((f) => f.severity)).toEqual(severity === null ? [] : [severity]);
    if (severity === 'error') expect(got[0]!.platforms).toEqual(['openai', 'gemini', 'copilot_studio']);
  });
});

describe('operation-method-unsupported', () => {
  it('flags an OpenAPI 3.2 query operation and each additionalOperations entry, which are not endpoints', () => {
    const doc = oas3(
      {
        '/a': {
          get: good('getA'),
          query: good('queryA'),
          additionalOperations: { COPY: good('copyA'), LINK: good('linkA'), broken: 'not an operation' },
        },
        '/b': { additionalOperations: 'not a map' },
        'x-query': { query: good('x') },
      },
      { openapi: '3.2.0' },
    );
    const result = validate(doc);
    expect(result.all_endpoints.map((e) => `${e.type} ${e.path}`)).toEqual(['GET /a']);
    const got = findings(doc, 'operation-method-unsupported');
    expect(got.map(brief)).toEqual([
      { endpoint: null, pointer: '/paths/~1a/query', severity: 'warning' },
      { endpoint: null, pointer: '/paths/~1a/additionalOperations/COPY', severity: 'warning' },
      { endpoint: null, pointer: '/paths/~1a/additionalOperations/LINK', severity: 'warning' },
    ]);
    expect(got[0]!.message).toMatch(/^QUERY \/a is not an endpoint here/);
    expect(got[1]!.message).toMatch(/^COPY \/a is not an endpoint here/);
    expect(got[0]!.platforms).toEqual(['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio']);
    expect(result.validations.readiness.platforms.openai).toMatchObject({ ready: true, warnings: 3 });
  });
});

describe('descriptions-near-duplicate', () => {
  it('flags operations whose summary and description are equal once case, punctuation and spaces are ignored', () => {
    const doc = oas3({
      '/a': { get: good('a', { summary: 'List items', description: 'Returns the items.' }) },
      '/b': { get: good('b', { summary: 'list   ITEMS', description: 'Returns the items!' }) },
      '/c': { get: good('c', { summary: 'List items', description: 'Returns other items.' }) },
      '/d': { get: { operationId: 'd' } },
      '/e': { get: { operationId: 'e' } },
    });
    expect(findings(doc, 'descriptions-near-duplicate').map(brief)).toEqual([
      { endpoint: 0, pointer: '/paths/~1a/get', severity: 'warning' },
      { endpoint: 1, pointer: '/paths/~1b/get', severity: 'warning' },
    ]);
  });

  it('long texts differing only after their start, and punctuation-heavy starts, are told apart correctly', () => {
    const base = `${'Lorem ipsum dolor sit amet. '.repeat(5)}`;
    const doc = oas3({
      '/a': { get: good('a', { summary: 's', description: `${base}one` }) },
      '/b': { get: good('b', { summary: 's', description: `${base}two` }) },
      '/c': { get: good('c', { summary: 's', description: `${base}one` }) },
      '/d': { get: good('d', { summary: '--------------------------------------------------s', description: 'x' }) },
      '/e': { get: good('e', { summary: 's', description: 'x' }) },
    });
    expect(findings(doc, 'descriptions-near-duplicate').map((f) => f.endpoint)).toEqual([0, 2, 3, 4]);
  });

  it('long texts alike once normalised are grouped, however their starts read: a start of separators, a capital sigma', () => {
    const words = 'reads the thing and returns it, with more words after it than the start holds';
    // The first 96 characters of A are mostly dashes: its start normalises to a few letters only.
    // C and D differ only in their leading spaces, which put the start's end before or after the
    // Β that makes Σ a medial σ rather than a final ς.
    const marks = '\u0301'.repeat(93);
    const doc = oas3({
      '/a': { get: good('a', { summary: 's', description: `${'-'.repeat(90)} ${words}` }) },
      '/b': { get: good('b', { summary: 'S', description: `- ${words}` }) },
      '/c': { get: good('c', { summary: `ΑΣ${marks}Β ${words}`, description: 'x' }) },
      '/d': { get: good('d', { summary: `   ΑΣ${marks}Β ${words}`, description: 'x' }) },
    });
    expect(findings(doc, 'descriptions-near-duplicate').map((f) => f.endpoint)).toEqual([0, 1, 2, 3]);
  });

  it('groups exactly as the whole normalised texts do, long texts read first by their start (property)', () => {
    // Variants of a few long texts: case changed, separators added or changed, capital sigmas
    // and combining marks (whose lower case or separation depends on what follows) anywhere,
    // so that two texts that normalise alike have starts of different lengths.
    const SEPARATORS = /[\s\u0021-\u002f\u003a-\u0040\u005b-\u0060\u007b-\u007f\u0085\u200b]+/g;
    const normalised = (s: string, d: string) => `${s} ${d}`.toLowerCase().replace(SEPARATORS, ' ').trim();
    const piece = fc.constantFrom('word', 'Word', 'WORD', ' ', '  ', '. ', '\t', '-', 'ΟΔΟΣ', 'Σ', 'σ', 'ς', 'e\u0301', '\u0301', '😀', '\u200b', 'x');
    const text = fc.array(piece, { minLength: 0, maxLength: 60 }).map((parts) => parts.join(''));
    const variant = (base: string) =>
      fc.tuple(fc.boolean(), fc.constantFrom(' ', '  ', '.', ' - ', '\n')).map(([upper, sep]) => (upper ? base.toUpperCase() : base).replaceAll(' ', sep));
    const operation = fc.array(text, { minLength: 1, maxLength: 3 }).chain((bases) =>
      fc.array(
        fc.tuple(fc.constantFrom(...bases), fc.constantFrom(...bases)).chain(([s, d]) => fc.tuple(variant(s), variant(d))),
        { minLength: 2, maxLength: 8 },
      ),
    );
    fc.assert(
      fc.property(operation, (texts) => {
        const paths = Object.fromEntries(texts.map(([summary, description], i) => [`/r${i}`, { get: good(`g${i}`, { summary, description }) }]));
        const counts = new Map<string, number>();
        for (const [s, d] of texts) counts.set(normalised(s, d), (counts.get(normalised(s, d)) ?? 0) + 1);
        const expected = texts.flatMap(([s, d], i) => (normalised(s, d) !== '' && counts.get(normalised(s, d))! > 1 ? [i] : []));
        expect(findings(oas3(paths), 'descriptions-near-duplicate').map((f) => f.endpoint)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('5,000 operations sharing one text: each flagged, each message bounded (its time: the bench)', () => {
    const paths = Object.fromEntries(
      Array.from({ length: 5000 }, (_, i) => [`/r${i}`, { get: good(`g${i}`, { summary: 'Same', description: 'Same text.' }) }]),
    );
    const got = findings(oas3(paths), 'descriptions-near-duplicate');
    expect(got).toHaveLength(5000);
    expect(got[0]!.message.length).toBeLessThan(200);
  });
});

describe('readiness', () => {
  const f = (severity: RuleFinding['severity'], endpoint: number | null, platforms: RuleFinding['platforms']): RuleFinding => ({
    rule: 'r',
    severity,
    endpoint,
    pointer: '',
    message: '',
    platforms,
    fix: null,
  });

  it('scores 80% the endpoints’ mean and 20% the document, each losing 20/5/1 per error/warning/info', () => {
    expect(readiness([], 4).score).toBe(100);
    // Endpoint 0 loses 20: mean 95 → 76 + 20 = 96.
    expect(readiness([f('error', 0, ['openai'])], 4).score).toBe(96);
    // The document loses 25: 80 + 15 = 95.
    expect(readiness([f('error', null, ['mcp']), f('warning', null, ['mcp'])], 4).score).toBe(95);
    // Floors at 0 per endpoint.
    expect(
      readiness(
        Array.from({ length: 10 }, () => f('error', 0, [])),
        1,
      ).score,
    ).toBe(20);
    // No endpoints: nothing to call, only the document's share.
    expect(readiness([], 0).score).toBe(20);
  });

  it('a platform is ready without error findings listing it; warnings are counted apart; info not at all', () => {
    const r = readiness([f('error', 0, ['openai', 'gemini']), f('warning', 1, ['openai']), f('info', 1, ['mcp'])], 2);
    expect(r.platforms.openai).toEqual({ ready: false, blocking: 1, warnings: 1 });
    expect(r.platforms.gemini).toEqual({ ready: false, blocking: 1, warnings: 0 });
    expect(r.platforms.mcp).toEqual({ ready: true, blocking: 0, warnings: 0 });
    expect(Object.keys(r.platforms)).toEqual(['openai', 'gpt_actions', 'anthropic', 'gemini', 'mcp', 'copilot_studio']);
  });

  it('worst_endpoints: most points lost first, ties by index, at most 10', () => {
    const list = [f('warning', 3, []), f('error', 1, []), f('warning', 2, []), ...Array.from({ length: 12 }, (_, i) => f('info', 4 + i, []))];
    const worst = readiness(list, 20).worst_endpoints;
    expect(worst.slice(0, 3)).toEqual([1, 2, 3]);
    expect(worst).toHaveLength(10);
  });

  it('on a document: per platform, from its findings', () => {
    const { validations } = validate(oas3({ '/a': { get: { operationId: 'a b', summary: 'S', description: 'D' } } }));
    expect(validations.readiness.platforms.openai.ready).toBe(false);
    expect(validations.readiness.platforms.gemini.ready).toBe(false);
    expect(validations.readiness.platforms.gpt_actions.ready).toBe(true);
    expect(validations.readiness.worst_endpoints).toEqual([0]);
  });
});

describe('real API descriptions (test/fixtures/specs)', () => {
  const files = SPEC_FILES.filter((f) => f !== 'kubernetes.json').map((f) => SPECS_DIR + f);

  /** The value at an RFC 6901 pointer, or undefined. */
  const at = (doc: unknown, pointer: string): unknown => {
    let node = doc;
    for (const raw of pointer.split('/').slice(1)) {
      const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
      if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
      node = (node as Record<string, unknown>)[key];
    }
    return node;
  };

  it('finds the documents', () => {
    expect(files.length).toBeGreaterThanOrEqual(14);
  });

  it.each(files.map((f) => [basename(f), f]))('%s: validates, every pointer names a value or where one belongs', (_name, file) => {
    const doc = parseDocument({ bytes: readFileSync(file), fileName: file });
    const { all_endpoints, validations } = validateDocument(doc);
    expect(validations.readiness.score).toBeGreaterThanOrEqual(0);
    expect(validations.readiness.score).toBeLessThanOrEqual(100);
    for (const f of validations.findings) {
      expect(RULE_IDS).toContain(f.rule);
      expect(f.endpoint === null || f.endpoint < all_endpoints.length).toBe(true);
      const parent = f.pointer.slice(0, f.pointer.lastIndexOf('/'));
      expect(at(doc, f.pointer) !== undefined || at(doc, parent) !== undefined, `${f.rule} ${f.pointer}`).toBe(true);
    }
  });

  it('sane on known documents', () => {
    const rules = (file: string) => new Set(validate(JSON.parse(readFileSync(`${FIXTURES}specs/${file}`, 'utf8'))).validations.findings.map((f) => f.rule));
    // No operation documents an error: one finding for the document.
    expect(rules('nl_business_gov.json')).toEqual(new Set(['response-error-undocumented']));
    // GET /auth.revoke, /views.publish, /views.update, /workflows.updateStep; `sort` lists `relevant`, `name`, … without an enum.
    expect(rules('slack.json')).toEqual(
      new Set([
        'summary-missing',
        'header-parameter-unsupported',
        'parameter-enum-missing',
        'confirmation-missing',
        'too-many-tools',
        'descriptions-near-duplicate',
      ]),
    );
    expect(rules('uber.swagger2.json')).toEqual(new Set(['operation-id-missing', 'description-too-long', 'response-unbounded']));
    expect(rules('webhook-example.oas31.json')).toEqual(new Set(['server-missing']));
  });
});
