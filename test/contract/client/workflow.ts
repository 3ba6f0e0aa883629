/**
 * The whole workflow of a user, through a client generated from the service's own OpenAPI
 * document (openapi-typescript) and openapi-fetch: no cast anywhere, so every request and
 * every answer below is typed by the document alone. client.test.ts generates
 * ./generated/openapi.d.ts into a temporary copy of this folder, type-checks this file there
 * with `tsc --noEmit`, then runs it against a live app. (The project's own type check leaves
 * this folder out: the generated types exist only in that copy.)
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './generated/openapi.js';

type Schemas = components['schemas'];

export interface WorkflowInput {
  baseUrl: string;
  /** An admin API key (sent as `Authorization: Bearer <key>`). */
  adminKey: string;
  /** An API description, as YAML. */
  yaml: string;
  /** A page the knowledge base can fetch, and a word on it. */
  page: { url: string; word: string };
}

export interface WorkflowOutcome {
  copilot: Schemas['Copilot'];
  second: Schemas['Copilot'];
  /** The `Link` header of the first page of a one-copilot-per-page list. */
  nextPage: string | null;
  listedAfterNext: string[];
  storedDocument: string;
  validation: Schemas['ValidationResult'];
  /** Finding key → the indexes it flags. */
  flagged: Record<string, number[]>;
  queued: Schemas['KnowledgeBaseLink'][];
  indexed: Schemas['KnowledgeBaseLink'];
  results: Schemas['SearchResult'][];
  deleted: Schemas['LinksDeleted'];
  key: Schemas['ApiKeyCreated'];
  listedKeys: Schemas['ApiKey'][];
  revokedStatus: number;
  audit: Schemas['AuditEntry'][];
  /** An error answer, as the Error schema types it. */
  notFound: Schemas['Error'];
}

/** The answer's data, or an exception saying what the service answered instead. */
function data<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data;
}

const flaggedIndexes = (map: Schemas['FlagMap']): number[] => (Array.isArray(map) ? [] : Object.keys(map).map(Number));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runWorkflow(input: WorkflowInput): Promise<WorkflowOutcome> {
  const client = createClient<paths>({ baseUrl: input.baseUrl, headers: { authorization: `Bearer ${input.adminKey}` } });

  // Create a copilot, then give it an API description as a raw YAML body.
  const copilot = data(await client.POST('/backend/api/copilots', { body: { name: 'Contract copilot', website: 'https://example.com' } }), 'create');
  const id = copilot.id;
  const uploaded = data(
    await client.PUT('/backend/api/copilot/{id}/swagger', {
      params: { path: { id } },
      body: input.yaml,
      bodySerializer: (body) => body,
      headers: { 'content-type': 'application/yaml' },
    }),
    'upload',
  );
  const storedDocument = data(await client.GET('/backend/api/copilot/{id}/swagger', { params: { path: { id } }, parseAs: 'text' }), 'download');

  // A second copilot with its description in one multipart call; then the list, one per page.
  const second = data(
    await client.POST('/backend/api/copilot/swagger', {
      body: { swagger_file: input.yaml, name: 'Second copilot' },
      bodySerializer: (body) => {
        const form = new FormData();
        form.set('swagger_file', new Blob([body.swagger_file], { type: 'application/yaml' }), 'second.yaml');
        form.set('name', body.name);
        return form;
      },
    }),
    'create with description',
  );
  const firstPage = await client.GET('/backend/api/copilots', { params: { query: { limit: 1 } } });
  data(firstPage, 'list');
  const nextPage = firstPage.response.headers.get('link');
  const cursor = nextPage === null ? null : new URL(/^<([^>]+)>/.exec(nextPage)?.[1] ?? '', input.baseUrl).searchParams.get('cursor');
  const after = cursor === null ? [] : data(await client.GET('/backend/api/copilots', { params: { query: { limit: 1, cursor } } }), 'next page');

  // Validate: the endpoints and what an LLM would struggle with.
  const validation = data(await client.GET('/backend/api/copilot/{id}/validator', { params: { path: { id: uploaded.id } } }), 'validate');
  const v = validation.validations;
  const flagged: Record<string, number[]> = {
    endpoints_without_operation_id: flaggedIndexes(v.endpoints_without_operation_id),
    endpoints_without_description: flaggedIndexes(v.endpoints_without_description),
    endpoints_without_name: flaggedIndexes(v.endpoints_without_name),
  };

  // The knowledge base: add a page, wait for it to be indexed, search it, delete it.
  const kb = { params: { path: { bot_id: id } } };
  const queued = data(await client.POST('/backend/knowledgebase/b/{bot_id}', { ...kb, body: { links: [input.page.url] } }), 'add links').links;
  let indexed: Schemas['KnowledgeBaseLink'] | undefined;
  for (let attempt = 0; attempt < 500 && indexed === undefined; attempt++) {
    const links = data(await client.GET('/backend/knowledgebase/b/{bot_id}', { params: { path: { bot_id: id }, query: { limit: 10 } } }), 'links').links;
    const link = links.find((l) => l.url === input.page.url);
    if (link?.status === 'failed') throw new Error(`the page was not indexed: ${link.error}`);
    if (link?.status === 'indexed') indexed = link;
    else await sleep(20);
  }
  if (indexed === undefined) throw new Error('the page was not indexed in time');
  const results = data(
    await client.GET('/backend/knowledgebase/b/{bot_id}/search', { params: { path: { bot_id: id }, query: { q: input.page.word } } }),
    'search',
  ).results;
  const deleted = data(await client.DELETE('/backend/knowledgebase/b/{bot_id}', { ...kb, body: { links: [input.page.url] } }), 'delete links');

  // Keys: one limited to this copilot, listed, then revoked.
  const key = data(await client.POST('/backend/api/keys', { body: { scopes: ['knowledgebase:read'], bots: [id], name: 'contract' } }), 'create key');
  const listedKeys = data(await client.GET('/backend/api/keys'), 'list keys');
  const revoked = await client.DELETE('/backend/api/keys/{id}', { params: { path: { id: key.id } } });

  // The audit log of this copilot, and an error answer.
  const audit = data(await client.GET('/backend/api/audit', { params: { query: { bot_id: id } } }), 'audit');
  const missing = await client.GET('/backend/api/copilot/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } });
  if (missing.error === undefined) throw new Error('an unknown copilot was found');

  return {
    copilot,
    second,
    nextPage,
    listedAfterNext: after.map((c) => c.id),
    storedDocument,
    validation,
    flagged,
    queued,
    indexed,
    results,
    deleted,
    key,
    listedKeys,
    revokedStatus: revoked.response.status,
    audit,
    notFound: missing.error,
  };
}
