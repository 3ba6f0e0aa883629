import { Readable } from 'node:stream';
import { parseDocument as parseXml } from 'htmlparser2';
import { describe, expect, it } from 'vitest';
import {
  GITHUB_ANNOTATIONS_SHOWN,
  githubFailure,
  githubLines,
  renderJunit,
  renderSarif,
  SARIF_MAX_RESULTS,
  textLines,
  type Located,
} from '../../src/cli/formats.js';
import { positionsOf } from '../../src/cli/positions.js';
import { runValidate, type CliIo } from '../../src/cli/validate.js';
import type { RuleFinding } from '../../src/domain/validator/index.js';

const finding = (over: Partial<RuleFinding> = {}): RuleFinding => ({
  rule: 'operation-id-invalid',
  severity: 'error',
  endpoint: 0,
  pointer: '/paths/~1a/get/operationId',
  message: 'm',
  platforms: ['openai'],
  fix: null,
  ...over,
});

async function locate(text: string, format: 'json' | 'yaml', pointer: string) {
  const at = await positionsOf({ bytes: Buffer.from(text) }, format);
  return at(pointer);
}

describe('positions of JSON pointers', () => {
  const json = '{\n  "paths": {\n    "/a~b/c": {\n      "get": { "operationId": "x", "parameters": [ {"name": "p"}, {"name": "q"} ] }\n    }\n  }\n}\n';

  it('JSON: a member at its key, an array element at its value, escapes decoded', async () => {
    expect(await locate(json, 'json', '/paths/~1a~0b~1c/get/operationId')).toEqual({ line: 4, column: 16 });
    expect(await locate(json, 'json', '/paths/~1a~0b~1c/get/parameters/1')).toEqual({ line: 4, column: 67 });
    expect(await locate(json, 'json', '')).toEqual({ line: 1, column: 1 });
  });

  it('JSON: a pointer past the text stops at the deepest node it reaches', async () => {
    expect(await locate(json, 'json', '/paths/~1a~0b~1c/get/summary')).toEqual({ line: 4, column: 7 });
    expect(await locate(json, 'json', '/paths/~1a~0b~1c/get/parameters/7/name')).toEqual({ line: 4, column: 36 });
    expect(await locate(json, 'json', '/servers')).toEqual({ line: 1, column: 1 });
  });

  it('JSON after a byte-order mark counts from the text', async () => {
    const at = await positionsOf({ bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":\n  {"b": 1}}')]) }, 'json');
    expect(at('/a/b')).toEqual({ line: 2, column: 4 });
  });

  it('YAML: block and flow collections, quoted keys, aliases followed', async () => {
    const yaml = [
      'openapi: 3.0.3',
      'paths:',
      "  '/a':",
      '    get: &op',
      '      operationId: x',
      '      parameters:',
      '        - name: p',
      '        - {name: q, in: query}',
      '    put: *op',
      '  "/b": {get: {summary: s}}',
    ].join('\n');
    expect(await locate(yaml, 'yaml', '/paths/~1a/get/operationId')).toEqual({ line: 5, column: 7 });
    expect(await locate(yaml, 'yaml', '/paths/~1a/get/parameters/1/in')).toEqual({ line: 8, column: 21 });
    expect(await locate(yaml, 'yaml', '/paths/~1b/get/summary')).toEqual({ line: 10, column: 16 });
    expect(await locate(yaml, 'yaml', '/paths/~1a/put/operationId')).toEqual({ line: 5, column: 7 }); // in the anchored text
    expect(await locate(yaml, 'yaml', '/paths/~1a/delete')).toEqual({ line: 3, column: 3 });
  });
});

describe('positions in YAML, more shapes', () => {
  it('double-quoted keys, block scalars, a key after a block scalar, a quoted << as an ordinary key', async () => {
    const yaml = ['paths:', '  "/x y":', '    get:', '      description: |', '        Long', '        text.', '      operationId: "x"', '  "<<": {a: 1}'].join(
      '\n',
    );
    expect(await locate(yaml, 'yaml', '/paths/~1x y/get/description')).toEqual({ line: 4, column: 7 });
    expect(await locate(yaml, 'yaml', '/paths/~1x y/get/operationId')).toEqual({ line: 7, column: 7 });
    expect(await locate(yaml, 'yaml', '/paths/~1x y')).toEqual({ line: 2, column: 3 });
    expect(await locate(yaml, 'yaml', '/paths/<</a')).toEqual({ line: 8, column: 10 });
  });

  it('merge keys: a key merged in is placed where its source writes it; own keys first, then the sources in order', async () => {
    const yaml = [
      'defaults: &d',
      '  summary: shared',
      '  responses: {200: {description: ok}}',
      'more: &m',
      '  summary: later',
      '  tags: [t]',
      'paths:',
      '  /a:',
      '    get:',
      '      <<: [*d, *m]',
      '      operationId: a',
      '    put:',
      '      summary: own',
      '      <<: *d',
    ].join('\n');
    expect(await locate(yaml, 'yaml', '/paths/~1a/get/summary')).toEqual({ line: 2, column: 3 });
    expect(await locate(yaml, 'yaml', '/paths/~1a/get/responses/200/description')).toEqual({ line: 3, column: 21 });
    expect(await locate(yaml, 'yaml', '/paths/~1a/get/tags/0')).toEqual({ line: 6, column: 10 });
    expect(await locate(yaml, 'yaml', '/paths/~1a/get/operationId')).toEqual({ line: 11, column: 7 });
    expect(await locate(yaml, 'yaml', '/paths/~1a/put/summary')).toEqual({ line: 13, column: 7 });
    expect(await locate(yaml, 'yaml', '/paths/~1a/put/responses')).toEqual({ line: 3, column: 3 });
  });

  it('an item an alias repeats is placed where its anchor writes it, in flow and block sequences (CLI sweep: one column into the alias)', async () => {
    const yaml = ['x: &hdr {name: X-Key, in: header}', 'flow: [*hdr]', 'block:', '  - *hdr', 'list: &l [a, b]', 'again: *l'].join('\n');
    expect(await locate(yaml, 'yaml', '/flow/0')).toEqual({ line: 1, column: 9 });
    expect(await locate(yaml, 'yaml', '/block/0')).toEqual({ line: 1, column: 9 });
    expect(await locate(yaml, 'yaml', '/block/0/in')).toEqual({ line: 1, column: 23 });
    expect(await locate(yaml, 'yaml', '/again/1')).toEqual({ line: 5, column: 14 });
  });

  it('an alias is the anchor of that name written before it, not a later one of the same name', async () => {
    const yaml = ['a: &x', '  summary: first', 'b: *x', 'c: &x', '  summary: second', 'd: *x'].join('\n');
    expect(await locate(yaml, 'yaml', '/b/summary')).toEqual({ line: 2, column: 3 });
    expect(await locate(yaml, 'yaml', '/d/summary')).toEqual({ line: 5, column: 3 });
  });
});

describe('format escaping', () => {
  const located: Located[] = [{ finding: finding({ message: '100% sure,\nreally: <b>&\u0001' }), position: { line: 3, column: 5 } }];

  it('bidi controls and invisible characters of a document are escaped in every format, as control characters are', () => {
    const bidi: Located[] = [{ finding: finding({ message: 'operationId “repos\u202eteg” has\u200b a \u2066mark' }), position: { line: 1, column: 1 } }];
    const escaped = 'operationId “repos\\u202eteg” has\\u200b a \\u2066mark';
    expect(textLines('a\u202e.yaml', bidi)).toBe(`a\\u202e.yaml:1:1: error operation-id-invalid: ${escaped} [openai]\n`);
    expect(githubLines('a.yaml', bidi)).toContain(`::${escaped}\n`);
    expect(renderJunit([{ label: 'a.yaml', located: bidi }], 'error')).toContain(escaped);
    // GitHub's code scanning shows a SARIF result's message as it is.
    const run = JSON.parse(
      renderSarif([
        { label: 'a.yaml', located: bidi },
        { label: 'b.yaml', located: [], error: 'unreadable \u202eb' },
      ]),
    ).runs[0];
    expect(run.results[0].message.text).toBe(escaped);
    expect(run.invocations[0].toolExecutionNotifications[0].message.text).toBe('unreadable \\u202eb');
  });

  it('github: data and properties escaped as the workflow command syntax asks', () => {
    expect(githubLines('dir,x/a:b.yaml', located)).toBe(
      '::error file=dir%2Cx/a%3Ab.yaml,line=3,col=5,title=operation-id-invalid::100%25 sure,%0Areally: <b>&\\u0001\n',
    );
    expect(githubLines('a.yaml', [{ ...located[0]!, finding: finding({ severity: 'info' }) }])).toMatch(/^::notice /);
  });

  it(`github: an input with more than ${GITHUB_ANNOTATIONS_SHOWN} findings of a kind first gets a notice counting them (GitHub drops the rest silently)`, () => {
    const of = (severity: RuleFinding['severity'], n: number) => Array.from({ length: n }, () => ({ ...located[0]!, finding: finding({ severity }) }));
    const many = githubLines('a,b.yaml', [...of('error', 11), ...of('warning', 3), ...of('info', 1)]).split('\n');
    expect(many[0]).toBe(
      '::notice file=a%2Cb.yaml,title=copilot-service::11 errors, 3 warnings, 1 notice: GitHub shows 10 annotations of each kind per step; the log lists them all, and --format sarif gives them to code scanning.',
    );
    expect(many).toHaveLength(1 + 15 + 1);
    expect(githubLines('a.yaml', [...of('error', 10), ...of('info', 10)])).not.toContain('title=copilot-service');
  });

  it('text: control characters escaped', () => {
    expect(textLines('a\u001b.yaml', located)).toBe('a\\u001b.yaml:3:5: error operation-id-invalid: 100% sure,\\u000areally: <b>&\\u0001 [openai]\n');
  });

  it('junit: well-formed XML whatever the message holds', () => {
    const xml = renderJunit([{ label: 'a&<b>.yaml', located }], 'error');
    const doc = parseXml(xml, { xmlMode: true });
    expect(xml).not.toContain('\u0001');
    expect(xml).toContain('&lt;b&gt;&amp;');
    expect(doc.children.some((n) => 'name' in n && n.name === 'testsuites')).toBe(true);
  });

  it('sarif: info is a note; an unknown rule has no ruleIndex', () => {
    const sarif = JSON.parse(renderSarif([{ label: 'a b.yaml', located: [{ ...located[0]!, finding: finding({ rule: 'not-a-rule', severity: 'info' }) }] }]));
    const [result] = sarif.runs[0].results;
    expect(result.level).toBe('note');
    expect(result.ruleIndex).toBeUndefined();
    // Columns are UTF-16 code units, and the run says so (CLI sweep: a consumer could not tell).
    expect(sarif.runs[0].columnKind).toBe('utf16CodeUnits');
    expect(result.locations[0].physicalLocation.artifactLocation.uri).toBe('a%20b.yaml');
  });
});

describe('sarif within what code scanning accepts', () => {
  // Microsoft Graph's description alone has 29,702 findings; GitHub rejects a run of more than 25,000 results.
  const at = (severity: RuleFinding['severity'], n: number): Located => ({
    finding: finding({ severity, pointer: `/n/${n}` }),
    position: { line: n, column: 1 },
  });
  const results = (sarif: string) => JSON.parse(sarif).runs[0];

  it(`a run keeps at most ${SARIF_MAX_RESULTS} results: the severest, in the order found, and says how many it left out`, () => {
    const located: Located[] = [at('info', 0)];
    for (let n = 1; n < SARIF_MAX_RESULTS; n++) located.push(at('warning', n));
    located.push(at('error', SARIF_MAX_RESULTS), at('info', SARIF_MAX_RESULTS + 1));
    const second: Located[] = [at('error', 1), at('warning', 2)];
    const run = results(
      renderSarif([
        { label: 'a.json', located },
        { label: 'b.json', located: second },
      ]),
    );
    expect(run.results).toHaveLength(SARIF_MAX_RESULTS);
    const levels = run.results.map((r: { level: string }) => r.level);
    expect(levels.filter((l: string) => l === 'error')).toHaveLength(2);
    expect(levels).not.toContain('note');
    // Warnings are kept first come, across inputs: b.json's one is the last found and is left out.
    expect(run.results.at(-1).locations[0].physicalLocation.artifactLocation.uri).toBe('b.json');
    expect(run.results.at(-1).level).toBe('error');
    expect(run.results.at(-2).properties.pointer).toBe(`/n/${SARIF_MAX_RESULTS}`);
    expect(run.results.at(-3).properties.pointer).toBe(`/n/${SARIF_MAX_RESULTS - 2}`);
    const [notice] = run.invocations[0].toolExecutionNotifications;
    expect(notice.level).toBe('warning');
    expect(notice.message.text).toBe(
      `4 of 25,004 findings are left out: code scanning takes at most 25,000 results per run, so the severest are kept (2 of 25,000 warnings, 2 of 2 infos left out). --format json lists them all.`,
    );
    expect(run.invocations[0].executionSuccessful).toBe(true);
  });

  it('a run of exactly the limit is whole, with no notification', () => {
    const located = Array.from({ length: SARIF_MAX_RESULTS }, (_, n) => at(n % 2 === 0 ? 'info' : 'error', n));
    const run = results(renderSarif([{ label: 'a.json', located }]));
    expect(run.results).toHaveLength(SARIF_MAX_RESULTS);
    expect(run.invocations[0].toolExecutionNotifications).toEqual([]);
  });

  it('an unreadable input still makes the invocation unsuccessful', () => {
    const run = results(renderSarif([{ label: 'a.json', located: [], error: 'unreadable' }]));
    expect(run.invocations[0].executionSuccessful).toBe(false);
  });
});

describe('runValidate inputs', () => {
  const io = () => {
    const out = { stdout: '', stderr: '' };
    const cli: CliIo = { stdout: (s) => (out.stdout += typeof s === 'string' ? s : Buffer.from(s).toString()), stderr: (s) => (out.stderr += s) };
    return { out, cli };
  };

  it('standard input under --max-bytes: refused once past it', async () => {
    const { out, cli } = io();
    const stdin = Readable.from([Buffer.from('{"openapi":"3.0.3",'), Buffer.from('"paths":{}}')]);
    expect(await runValidate('-', { format: 'json', stdin, maxBytes: 10 }, cli)).toBe(2);
    expect(out.stderr).toContain('Standard input is larger than 10 bytes');
  });

  it('standard input within --max-bytes is validated', async () => {
    const { out, cli } = io();
    const stdin = Readable.from([Buffer.from('openapi: 3.0.3\npaths: {}\n')]);
    expect(await runValidate(['-'], { format: 'json', stdin, maxBytes: 1000 }, cli)).toBe(1); // no server
    expect(out.stdout.startsWith('{"all_endpoints":[]')).toBe(true);
  });
});

describe('input names in SARIF (valid URI references, no credentials)', () => {
  const one: Located[] = [{ finding: finding(), position: { line: 3, column: 5 } }];
  const uris = (sarif: string): string[] =>
    JSON.parse(sarif).runs[0].results.map(
      (r: { locations: { physicalLocation: { artifactLocation: { uri: string } } }[] }) => r.locations[0]!.physicalLocation.artifactLocation.uri,
    );

  it('a relative path with a colon in its first segment stays a relative reference to that file', () => {
    // A backslash is a character of a POSIX file name, not a directory (CLI sweep: it became `/`).
    const labels = ['c:foo.json', 'c:dir/x.json', 'dir/c:x.json', 'a#b?.json', 'a b.yaml', 'back\\slash?q=1.json'];
    const written = uris(renderSarif(labels.map((label) => ({ label, located: one }))));
    expect(written).toEqual(['c%3Afoo.json', 'c%3Adir/x.json', 'dir/c:x.json', 'a%23b%3F.json', 'a%20b.yaml', 'back%5Cslash%3Fq=1.json']);
    // Resolved against the checkout, each names the file, not a scheme, query or fragment.
    const files = written.map((uri) => decodeURIComponent(new URL(uri, 'file:///repo/').pathname));
    expect(files).toEqual(labels.map((label) => `/repo/${label}`));
  });

  it('standard input is a URI with a scheme of its own, never a file named stdin', () => {
    const sarif = renderSarif([
      { label: '-', located: one },
      { label: 'stdin', located: one },
      { label: '-', located: [], error: 'Standard input is not JSON or YAML.' },
    ]);
    const run = JSON.parse(sarif).runs[0];
    expect(uris(sarif)).toEqual(['stdin:', 'stdin']);
    expect(run.results[0].locations[0].physicalLocation.artifactLocation.description.text).toBe('standard input');
    expect(run.invocations[0].toolExecutionNotifications[0].locations[0].physicalLocation.artifactLocation.uri).toBe('stdin:');
    // Not a relative reference: a consumer resolving it against the checkout does not get a file.
    expect(new URL('stdin:', 'file:///repo/').protocol).toBe('stdin:');
  });

  it('a URL keeps no user or password, in SARIF and in every other format, and on standard error', async () => {
    // The fetcher refuses a URL with credentials before connecting, and says which.
    const url = 'http://user:secret@example.com/x.json';
    for (const format of ['sarif', 'text', 'junit', 'github', 'json'] as const) {
      const out = { stdout: '', stderr: '' };
      const cli: CliIo = { stdout: (s) => (out.stdout += typeof s === 'string' ? s : Buffer.from(s).toString()), stderr: (s) => (out.stderr += s) };
      expect(await runValidate(url, { format }, cli)).toBe(2);
      expect(`${out.stdout}${out.stderr}`, format).not.toContain('secret');
      expect(out.stderr, format).toContain('http://example.com/x.json');
      if (format === 'sarif') {
        const refused = JSON.parse(out.stdout).runs[0].invocations[0].toolExecutionNotifications[0];
        expect(refused.locations[0].physicalLocation.artifactLocation.uri).toBe('http://example.com/x.json');
      }
    }
  });
});

describe('control characters in junit and github, escaped as text escapes them', () => {
  // An operationId that clears the screen, turns red and forges a finding line of its own.
  const injected = 'a\u001b[2J\u001b[31mRED\r\n10:1 error /fake: injected';
  const located: Located[] = [{ finding: finding({ message: `${injected} 50%\u0007\u007f\u009b]]>` }), position: { line: 3, column: 5 } }];
  const escaped = 'a\\u001b[2J\\u001b[31mRED\\u000d\\u000a10:1 error /fake: injected';
  // Any C0 control, DEL or C1 character.
  // eslint-disable-next-line no-control-regex
  const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

  it('junit: a message is one line of the failure, markup still escaped', () => {
    const xml = renderJunit([{ label: 'a\u001b\t.yaml', located }], 'error');
    // Only the document's own line breaks: no other control character, raw or decoded.
    expect(xml.replace(/\n/g, '')).not.toMatch(CONTROL);
    expect(xml).toContain(`${escaped} 50%\\u0007\\u007f\\u009b]]&gt;</failure>`);
    expect(xml).toContain('<testsuite name="a\\u001b\\u0009.yaml"');
    type El = { type: string; name: string; attribs: Record<string, string>; children: (El & { data?: string })[] };
    const all = (nodes: El[]): El[] => nodes.flatMap((n) => (n.type === 'tag' ? [n, ...all(n.children)] : []));
    const failure = all(parseXml(xml, { xmlMode: true }).children as unknown as El[]).find((n) => n.name === 'failure')!;
    const text = failure.children.map((c) => c.data ?? '').join('');
    expect(text).toBe(`3:5 error /paths/~1a/get/operationId: ${escaped} 50%\\u0007\\u007f\\u009b]]>`);
    expect(text).not.toMatch(CONTROL);
  });

  it('junit: findings of one rule stay one per line', () => {
    const two = [located[0]!, { finding: finding({ message: 'second' }), position: { line: 4, column: 1 } }];
    const failure = /<failure [^>]*>([^<]*)<\/failure>/.exec(renderJunit([{ label: 'a.yaml', located: two }], 'error'))![1]!;
    expect(failure.split('\n')).toEqual([
      `3:5 error /paths/~1a/get/operationId: ${escaped} 50%\\u0007\\u007f\\u009b]]&gt;`,
      '4:1 error /paths/~1a/get/operationId: second',
    ]);
  });

  it('github: C0, DEL and C1 escaped as text does; %, CR, LF, : and , as GitHub asks, % never doubled', () => {
    const out = githubLines('a\u001b,b:%.yaml', located);
    expect(out).toBe(
      '::error file=a\\u001b%2Cb%3A%25.yaml,line=3,col=5,title=operation-id-invalid::a\\u001b[2J\\u001b[31mRED%0D%0A10:1 error /fake: injected 50%25\\u0007\\u007f\\u009b]]>\n',
    );
    expect(out.slice(0, -1)).not.toMatch(CONTROL);
    expect(githubFailure('-', 'bad\u001b[0m\r\n::error::forged')).toBe('::error file=-,title=unreadable::bad\\u001b[0m%0D%0A::error::forged\n');
  });
});
