/**
 * Issue 15 §4: a client generated from the served document runs the whole workflow and
 * compiles with no cast. The types come from openapi-typescript into a temporary copy of
 * client/ (its workflow.ts is checked there with `tsc --noEmit`), and the workflow runs with
 * openapi-fetch against an app listening on 127.0.0.1, on each database.
 *
 * openapi-typescript 6 (not 7): 7 builds its output with the TypeScript compiler API, which
 * TypeScript 7 no longer ships (openapi-ts/openapi-typescript#2841); 6 writes text.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTS from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument, validateDocument } from '../../src/domain/validator/index.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { REPO_ROOT } from '../support/build.js';
import { DIALECTS } from '../support/databases.js';
import { COPILOT_KEYS } from '../support/http.js';
import { PageServer } from '../support/pages.js';
import { servedDocument, writeToTemp, type Json } from './served-document.js';

const CLIENT_DIR = path.join(REPO_ROOT, 'test', 'contract', 'client');
const WORKFLOW = path.join(CLIENT_DIR, 'workflow.ts');
const YAML_FILE = path.join(REPO_ROOT, 'test', 'fixtures', 'specs', 'petstore31.yaml');

/** What workflow.ts exports; it is imported by path, so the project's type check never reads it (see its header). */
interface WorkflowModule {
  runWorkflow(input: { baseUrl: string; adminKey: string; yaml: string; page: { url: string; word: string } }): Promise<Json>;
}

/** The source without comments and string literals: what a cast would be written in. */
function code(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|"(?:[^"\\\n]|\\.)*"/g, "''");
}

describe('a client generated from the OpenAPI document', () => {
  let workspace: string;
  beforeAll(async () => {
    const served = writeToTemp(await servedDocument());
    workspace = served.dir;
    mkdirSync(path.join(workspace, 'generated'));
    writeFileSync(path.join(workspace, 'generated', 'openapi.d.ts'), await openapiTS(pathToFileURL(served.file)));
    copyFileSync(WORKFLOW, path.join(workspace, 'workflow.ts'));
    writeFileSync(path.join(workspace, 'package.json'), JSON.stringify({ type: 'module' }));
    symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(workspace, 'node_modules'), 'dir');
    writeFileSync(
      path.join(workspace, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['workflow.ts'],
      }),
    );
  });
  afterAll(() => rmSync(workspace, { recursive: true, force: true }));

  it('compiles: the workflow type-checks against the generated types with tsc --noEmit', async () => {
    const tsc = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc');
    const result = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(tsc, ['-p', path.join(workspace, 'tsconfig.json')], { cwd: workspace }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` }),
      );
    });
    expect(result.output).toBe('');
    expect(result.code).toBe(0);
  });

  it('has no cast and no any: every type comes from the document', () => {
    const source = code(readFileSync(WORKFLOW, 'utf8'));
    expect(source).not.toMatch(/\bas\s+(?!const\b)[\w{[(]/);
    expect(source).not.toMatch(/:\s*any\b|<any>/);
    expect(source).not.toMatch(/@ts-(ignore|expect-error|nocheck)/);
  });

  for (const dialect of DIALECTS) {
    describe(`runs the whole workflow against a live app (${dialect})`, () => {
      let t: TestApp;
      let pages: PageServer;
      let baseUrl: string;
      beforeAll(async () => {
        t = await buildTestApp(dialect, { worker: true });
        pages = await PageServer.start();
        pages.set('/guide', {
          body: '<html><head><title>Guide</title></head><body><main><p>The zebrafinch sings at dawn, every day of the year.</p></main></body></html>',
        });
        const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
        baseUrl = address;
      });
      afterAll(async () => {
        await pages.close();
        await t.close();
      });

      it('create, upload YAML, validate, add links, search, delete links, keys, audit', async () => {
        const workflow: WorkflowModule = await import(pathToFileURL(WORKFLOW).href);
        const yaml = readFileSync(YAML_FILE, 'utf8');
        const pageUrl = pages.url('/guide');
        const out = await workflow.runWorkflow({ baseUrl, adminKey: t.admin.replace(/^Bearer /, ''), yaml, page: { url: pageUrl, word: 'zebrafinch' } });

        expect(Object.keys(out.copilot)).toEqual([...COPILOT_KEYS]);
        expect(out.copilot.status).toBe('draft');
        expect(out.second.swagger_url).toMatch(/^[A-Za-z0-9]{20}\.yaml$/);
        expect(out.nextPage).toMatch(/^<\/backend\/api\/copilots\?limit=1&cursor=[^>]+>; rel="next"$/);
        expect(out.listedAfterNext).toEqual([out.copilot.id]);
        expect(out.storedDocument).toBe(yaml);

        // The typed answer is the validator's own result for the same document.
        const expected = validateDocument(parseDocument({ bytes: Buffer.from(yaml), fileName: 'petstore31.yaml' }));
        expect(out.validation).toEqual({ chatbot_id: out.copilot.id, ...JSON.parse(JSON.stringify(expected)) });
        expect(out.validation.all_endpoints.length).toBeGreaterThan(0);
        for (const [key, indexes] of Object.entries(out.flagged)) {
          const map = expected.validations[key as keyof typeof expected.validations];
          expect(indexes, key).toEqual(Array.isArray(map) || typeof map !== 'object' || map === null ? [] : Object.keys(map).map(Number));
        }

        expect(out.queued).toEqual([expect.objectContaining({ url: pageUrl, status: 'pending' })]);
        expect(out.indexed).toMatchObject({ url: pageUrl, status: 'indexed', error: null });
        expect(out.indexed.passages).toBeGreaterThan(0);
        expect(out.results[0]).toMatchObject({ url: pageUrl, passage: 0 });
        expect(out.results[0].content).toContain('zebrafinch');
        expect(out.deleted).toEqual({
          message: 'Knowledge base and associated links have been successfully deleted.',
          deleted_links: [pageUrl],
          not_found_links: [],
        });

        expect(out.key).toMatchObject({ scopes: ['knowledgebase:read'], bots: [out.copilot.id], name: 'contract' });
        expect(out.listedKeys.map((k: Json) => k.id)).toContain(out.key.id);
        expect(out.revokedStatus).toBe(204);

        expect(out.audit.map((e: Json) => e.action)).toEqual(
          expect.arrayContaining(['copilot.create', 'api_description.upload', 'knowledgebase.add_links', 'knowledgebase.delete_links']),
        );
        expect(out.notFound).toMatchObject({ error: 'copilot_not_found' });
      });
    });
  }
});
