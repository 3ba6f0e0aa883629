/** The dashboard's pure helpers for the report's findings (issue 18 §D) and the versions view (issue 16 §3). */
import { describe, expect, it } from 'vitest';
import { filterFindings, groupFindings, pageOfEndpoint, pathSegments, type RuleFinding, severityCounts } from '../../web/src/lib/report-model.js';
import { type ApiDescriptionChange, formatBytes, groupChanges, isSyncableUrl, shortSha, versionFileName } from '../../web/src/lib/versions-model.js';

const finding = (rule: string, severity: RuleFinding['severity'], platforms: RuleFinding['platforms'], fix: unknown = null, endpoint = 0): RuleFinding => ({
  rule,
  severity,
  endpoint,
  pointer: `/paths/~1x/get/${rule}`,
  message: `${rule} message`,
  platforms,
  fix,
});

describe('findings: filter and groups', () => {
  const findings = [
    finding('summary-missing', 'warning', ['copilot_studio']),
    finding('operation-id-invalid', 'error', ['openai', 'anthropic'], 'get_x', 1),
    finding('description-missing', 'info', []),
    finding('operation-id-invalid', 'error', ['openai'], 'get_y', 2),
    finding('summary-missing', 'warning', ['copilot_studio', 'gpt_actions'], null, 3),
    finding('operation-id-missing', 'error', ['gpt_actions'], 'get_z', 4),
    finding('summary-missing', 'warning', ['gpt_actions'], null, 5),
  ];

  it('filters by platform and by severity, alone or together, and returns the same array without a filter', () => {
    expect(filterFindings(findings, { platform: null, severity: null })).toBe(findings);
    expect(filterFindings(findings, { platform: 'openai', severity: null }).map((f) => f.endpoint)).toEqual([1, 2]);
    expect(filterFindings(findings, { platform: null, severity: 'warning' }).map((f) => f.endpoint)).toEqual([0, 3, 5]);
    expect(filterFindings(findings, { platform: 'gpt_actions', severity: 'warning' }).map((f) => f.endpoint)).toEqual([3, 5]);
    expect(filterFindings(findings, { platform: 'gemini', severity: null })).toEqual([]);
  });

  it('groups by rule and severity: errors first, then the largest group, then by rule id; items keep their order', () => {
    const groups = groupFindings(findings);
    expect(groups.map((g) => [g.severity, g.rule, g.items.length])).toEqual([
      ['error', 'operation-id-invalid', 2],
      ['error', 'operation-id-missing', 1],
      ['warning', 'summary-missing', 3],
      ['info', 'description-missing', 1],
    ]);
    expect(groups[0]!.items.map((f) => f.fix)).toEqual(['get_x', 'get_y']);
    expect(groups[0]!.platforms).toEqual(['openai', 'anthropic']);
    expect(groups[0]!.fixable).toBe(2);
    expect(groups[2]!.platforms).toEqual(['copilot_studio', 'gpt_actions']);
    expect(groups[2]!.fixable).toBe(0);
    expect(new Set(groups.map((g) => g.key)).size).toBe(groups.length);
  });

  it('keeps one rule reported at two severities as two groups', () => {
    const groups = groupFindings([finding('too-many-tools', 'warning', ['anthropic']), finding('too-many-tools', 'error', ['openai'])]);
    expect(groups.map((g) => g.severity)).toEqual(['error', 'warning']);
  });

  it('counts severities', () => {
    expect(severityCounts(findings)).toEqual({ error: 3, warning: 3, info: 1 });
    expect(severityCounts([])).toEqual({ error: 0, warning: 0, info: 0 });
  });
});

describe('endpoint table helpers', () => {
  it('splits a path before each "/", never inside a segment, and joins back to it', () => {
    expect(pathSegments('/pets/{petId}/photos')).toEqual(['/pets', '/{petId}', '/photos']);
    expect(pathSegments('/')).toEqual(['/']);
    expect(pathSegments('')).toEqual(['']);
    expect(pathSegments('no-slash')).toEqual(['no-slash']);
    const long = '/organizations/{organizationId}/pull-requests/{pullRequestNumber}/review-comments';
    expect(pathSegments(long).join('')).toBe(long);
  });

  it('finds the page of an endpoint', () => {
    expect([0, 99, 100, 5999].map((i) => pageOfEndpoint(i, 100))).toEqual([0, 0, 1, 59]);
  });
});

describe('versions and changes', () => {
  const change = (version: number, kind: string, breaking: boolean): ApiDescriptionChange => ({
    version,
    kind,
    breaking,
    method: 'GET',
    path: `/${kind}`,
    message: kind,
    before: null,
    after: null,
  });

  it('groups changes by version, newest first, breaking before the others, merging a version split over pages', () => {
    const groups = groupChanges([
      change(3, 'endpoint-added', false),
      change(3, 'endpoint-removed', true),
      change(3, 'response-added', false),
      change(2, 'parameter-made-required', true),
      change(3, 'operation-id-changed', true), // a later page of version 3
    ]);
    expect(groups.map((g) => g.version)).toEqual([3, 2]);
    expect(groups[0]!.breaking.map((c) => c.kind)).toEqual(['endpoint-removed', 'operation-id-changed']);
    expect(groups[0]!.other.map((c) => c.kind)).toEqual(['endpoint-added', 'response-added']);
    expect(groups[1]!.breaking.map((c) => c.kind)).toEqual(['parameter-made-required']);
    expect(groupChanges([])).toEqual([]);
  });

  it('formats sizes, SHA prefixes, file names and tells a syncable URL', () => {
    expect([0, 1023, 1024, 1536, 5 * 1024 * 1024, -1].map(formatBytes)).toEqual(['0 B', '1023 B', '1 KB', '1.5 KB', '5 MB', '—']);
    expect(shortSha('a'.repeat(64))).toBe('aaaaaaaaaaaa');
    expect(versionFileName(3, 'application/json')).toBe('api-description-v3.json');
    expect(versionFileName(4, 'application/yaml')).toBe('api-description-v4.yaml');
    expect(['https://x.example/openapi.json', 'HTTP://x', 'Zx0.json', '', null, undefined].map(isSyncableUrl)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
  });
});
