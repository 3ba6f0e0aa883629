/** The dashboard's pure helpers (web/src/lib), run under Node. */
import { describe, expect, it } from 'vitest';
import { highlight, queryTerms, snippet } from '../../web/src/lib/highlight.js';
import { nextCursor, nextLinkTarget } from '../../web/src/lib/link-header.js';
import { buildReport, filterRows, flaggedIndexes, type Endpoint, type ValidatorResult } from '../../web/src/lib/report-model.js';
import { revivedShown, shown } from '../../web/src/lib/format.js';
import { descriptionMediaType } from '../../web/src/lib/upload.js';

describe('Link header', () => {
  it.each([
    ['</backend/api/copilots?limit=20&cursor=abc%3D>; rel="next"', 'abc='],
    ['<https://x.example/a?cursor=1>; rel="prev", </b?cursor=2&q=x>; rel="next"', '2'],
    ['</b?cursor=3>; title="a, b"; rel=next', '3'],
    ['</b?cursor=4>; rel="prev next"', '4'],
    ['</b?cursor=5>; rel="prev"', null],
    ['', null],
    [null, null],
  ])('%s → %s', (header, cursor) => {
    expect(nextCursor(header)).toBe(cursor);
  });

  it('returns the target as written', () => {
    expect(nextLinkTarget('</backend/knowledgebase/b/x?limit=1000&cursor=Q>; rel="next"')).toBe('/backend/knowledgebase/b/x?limit=1000&cursor=Q');
  });
});

describe('highlight', () => {
  it('marks query words at word starts, case-insensitively, longest first', () => {
    const terms = queryTerms('Pet petstore the');
    expect(terms).toEqual(['petstore', 'pet', 'the']);
    expect(highlight('The Petstore sells pets; carpet is not marked.', terms)).toEqual([
      { text: 'The', match: true },
      { text: ' ', match: false },
      { text: 'Petstore', match: true },
      { text: ' sells ', match: false },
      { text: 'pet', match: true },
      { text: 's; carpet is not marked.', match: false },
    ]);
  });

  it('treats search syntax and markup in the query and the text as plain characters', () => {
    // Single letters are left out (they would mark half the text); numbers are kept.
    expect(queryTerms('a*b (c) "d" OR <b> $(x) [.*] 7')).toEqual(['or', '7']);
    const pieces = highlight('<b>bold</b> OR x', queryTerms('<bold> or'));
    expect(pieces.map((p) => p.text).join('')).toBe('<b>bold</b> OR x');
    expect(pieces.filter((p) => p.match).map((p) => p.text)).toEqual(['bold', 'OR']);
    expect(highlight('text', [])).toEqual([{ text: 'text', match: false }]);
    expect(highlight('', ['x'])).toEqual([]);
  });

  it('handles letters beyond ASCII', () => {
    expect(
      highlight('Tromsø og Ålesund', queryTerms('ålesund TROMSØ'))
        .filter((p) => p.match)
        .map((p) => p.text),
    ).toEqual(['Tromsø', 'Ålesund']);
  });

  it('cuts long passages around the first match', () => {
    const text = `${'lorem '.repeat(200)}needle here ${'ipsum '.repeat(200)}`;
    const cut = snippet(text, ['needle'], 200);
    expect(cut.length).toBeLessThanOrEqual(204);
    expect(cut).toContain('needle here');
    expect(cut.startsWith('… ')).toBe(true);
    expect(cut.endsWith(' …')).toBe(true);
    expect(snippet('short text', ['x'])).toBe('short text');
  });
});

describe('validation report model', () => {
  const ep = (path: string, type = 'GET', extra: Partial<Endpoint> = {}): Endpoint => ({
    operationId: `op${path.replace(/\W/g, '')}`,
    type,
    name: `Name ${path}`,
    description: 'd',
    requestBody: null,
    requestParameters: null,
    responseBody: {},
    path,
    ...extra,
  });
  const endpoints = [ep('/a'), ep('/b', 'POST', { operationId: null }), ep('/c', 'GET', { name: '' }), ep('/d')];
  const result: ValidatorResult = {
    chatbot_id: 'x',
    all_endpoints: endpoints,
    validations: {
      endpoints_without_operation_id: { '1': endpoints[1]! },
      endpoints_without_description: [],
      endpoints_without_name: { '2': endpoints[2]! },
      auth_type: 'apiKey',
      base_url: null,
      readiness: {
        score: 71,
        platforms: {
          openai: { ready: true, blocking: 0, warnings: 0 },
          gpt_actions: { ready: false, blocking: 3, warnings: 0 },
          anthropic: { ready: true, blocking: 0, warnings: 0 },
          gemini: { ready: true, blocking: 0, warnings: 0 },
          mcp: { ready: false, blocking: 2, warnings: 0 },
          copilot_studio: { ready: false, blocking: 1, warnings: 0 },
        },
        worst_endpoints: [1, 0, 3, 2],
      },
      findings: [
        { rule: 'operation-id-duplicate', severity: 'error', endpoint: 0, pointer: '/paths/~1a/get/operationId', message: 'm', platforms: ['mcp'], fix: null },
        {
          rule: 'operation-id-duplicate',
          severity: 'error',
          endpoint: 3,
          pointer: '/paths/~1d/get/operationId',
          message: 'm',
          platforms: ['mcp'],
          fix: 'opd_get',
        },
        { rule: 'server-missing', severity: 'error', endpoint: null, pointer: '/servers', message: 'm', platforms: ['gpt_actions'], fix: null },
        // Out of range: dropped, as network data is read defensively.
        { rule: 'x', severity: 'error', endpoint: 9, pointer: '', message: 'm', platforms: [], fix: null },
      ],
    },
  };

  it('counts each finding and flags each endpoint by its index', () => {
    const report = buildReport(result);
    expect(report.counts).toEqual({ no_operation_id: 1, no_description: 0, no_name: 1 });
    expect(report.rows.map((r) => r.flags)).toEqual([[], ['no_operation_id'], ['no_name'], []]);
    expect(report.rows.map((r) => r.findings.map((f) => f.rule))).toEqual([['operation-id-duplicate'], [], [], ['operation-id-duplicate']]);
    expect(report.flagged).toBe(4);
    expect(report.findings).toHaveLength(3);
    expect(report.score).toBe(71);
    expect(report.platforms.map((p) => `${p.platform}:${p.ready}`)).toEqual([
      'openai:true',
      'gpt_actions:false',
      'anthropic:true',
      'gemini:true',
      'mcp:false',
      'copilot_studio:false',
    ]);
    expect(report.authType).toBe('apiKey');
    expect(report.baseUrl).toBeNull();
  });

  it('filters by flagged, by kind and by text', () => {
    const { rows } = buildReport(result);
    expect(filterRows(rows, { onlyFlagged: false, kind: null, text: '' })).toBe(rows);
    expect(filterRows(rows, { onlyFlagged: false, kind: 'no_name', text: '' }).map((r) => r.index)).toEqual([2]);
    expect(filterRows(rows, { onlyFlagged: true, kind: null, text: 'post' }).map((r) => r.index)).toEqual([1]);
    expect(filterRows(rows, { onlyFlagged: false, kind: null, text: 'NAME /d' }).map((r) => r.index)).toEqual([3]);
  });

  it('ignores keys that are not indexes of all_endpoints, and missing maps', () => {
    expect(flaggedIndexes({ '0': {}, '7': {}, x: {}, '-1': {} }, 4)).toEqual([0]);
    expect(flaggedIndexes(undefined, 4)).toEqual([]);
    expect(flaggedIndexes([], 4)).toEqual([]);
    // An answer without its maps (the dashboard reads network data defensively).
    const bare = buildReport({ chatbot_id: 'x', all_endpoints: [], validations: {} as ValidatorResult['validations'] });
    expect(bare.authType).toBe('unknown');
    expect(bare.score).toBeNull();
    expect(bare.findings).toEqual([]);
  });
});

describe('upload media type', () => {
  it.each([
    ['petstore.json', '', 'application/json'],
    ['API.YAML', '', 'application/yaml'],
    ['spec.yml', '{', 'application/yaml'],
    ['openapi', '  {"openapi": "3.0.0"}', 'application/json'],
    ['openapi.txt', 'openapi: 3.0.0', 'application/yaml'],
  ])('%s → %s', (name, head, type) => {
    expect(descriptionMediaType(name, head)).toBe(type);
  });
});

describe('shown: what an API description holds, as the dashboard shows it', () => {
  it('writes control and invisible formatting characters as escapes, and keeps tab, line feed, joiners and emoji', () => {
    expect(shown('repos\u202eteg')).toBe('repos\\u202eteg');
    expect(shown('a\u0007b\u200bc\u2066d\ufeff\u{e0041}')).toBe('a\\u0007b\\u200bc\\u2066d\\ufeff\\u{e0041}');
    expect(shown('line one\n\tline two \u{1F468}\u200d\u{1F469}')).toBe('line one\n\tline two \u{1F468}\u200d\u{1F469}');
  });

  it('revivedShown applies it to every string value of an answer, not to keys or other values', () => {
    const answer = JSON.parse('{"a\\u202e":["x\\u202ey",1,true,null,{"m":"\\u0000"}]}', revivedShown);
    expect(answer).toEqual({ 'a\u202e': ['x\\u202ey', 1, true, null, { m: '\\u0000' }] });
  });
});
