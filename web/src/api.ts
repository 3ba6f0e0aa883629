import type { CopilotTools, ToolDefinition } from '../../src/domain/validator/wire-types.js';
import type {
  ApiDescriptionChange,
  ApiDescriptionSync,
  ApiDescriptionVersion,
  ApiKey,
  ApiKeyCreate,
  ApiKeyCreated,
  ApiKeyIdentity,
  AuditEntry,
  Copilot,
  CopilotCreate,
  CopilotPatch,
  KnowledgeBaseLink,
  KnowledgeBaseLinks,
  LinksDeleted,
  SearchResult,
  SearchResults,
} from '../../src/domain/wire.js';
import type { CopilotSummary } from '../../src/domain/copilots/copilot-summaries.js';
import type { Crawl, CrawlRequest, Crawls } from '../../src/domain/crawl-wire.js';
import type { AuditFilters } from './lib/audit-filters.js';
import { nextCursor } from './lib/link-header.js';
import { revivedShown } from './lib/format.js';
import type { ValidatorResult } from './lib/report-model.js';

/**
 * The dashboard's only way to the service: its public HTTP API, same origin, with the
 * API key from this tab's session storage as a bearer token. URLs are resolved against
 * the page (not the host root) so a proxy may mount the service under a sub-path.
 */

const KEY_ITEM = 'cms.api-key';

export const session = {
  get(): string | null {
    try {
      return sessionStorage.getItem(KEY_ITEM);
    } catch {
      return null;
    }
  },
  set(key: string): void {
    sessionStorage.setItem(KEY_ITEM, key);
  },
  clear(): void {
    try {
      sessionStorage.removeItem(KEY_ITEM);
    } catch {
      /* storage unavailable: nothing kept */
    }
  },
};

/** An error answer of the API (`{error, message, details?}`), or a failure to reach it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let unauthorizedHandler: ((error: ApiError) => void) | null = null;

/** Told when a request made with the stored key answers 401 (the key was revoked, say). */
export function onUnauthorized(handler: ((error: ApiError) => void) | null): void {
  unauthorizedHandler = handler;
}

export interface ApiResponse<T> {
  status: number;
  data: T;
  /** The cursor of the next page when the `Link` header names one. */
  next: string | null;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | null | undefined>;
  json?: unknown;
  body?: BodyInit;
  contentType?: string;
  /** Use this key instead of the stored one (signing in). */
  key?: string;
  signal?: AbortSignal;
  /** Applied to the answer's JSON (`JSON.parse`'s reviver): `revivedShown` for what an API description holds. */
  reviver?: (key: string, value: unknown) => unknown;
}

function describeStatus(res: Response): string {
  return `The service answered ${res.status}${res.statusText ? ` ${res.statusText}` : ''} without an explanation.`;
}

export async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const url = new URL(path.replace(/^\/+/, ''), document.baseURI);
  for (const [name, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const key = options.key ?? session.get();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] = 'application/json';
  } else if (options.contentType) {
    headers['content-type'] = options.contentType;
  }

  let res: Response;
  try {
    res = await fetch(url, { method, headers, body, signal: options.signal, cache: 'no-store', credentials: 'omit' });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', 'Could not reach the service. Check that it is running and that this computer is online.');
  }

  const text = await res.text();
  let data: unknown = null;
  let json = false;
  if (text !== '' && /json/i.test(res.headers.get('content-type') ?? '')) {
    try {
      data = JSON.parse(text, options.reviver);
      json = true;
    } catch {
      data = null;
    }
  }
  // A success that is not the API's JSON (a proxy's sign-in page answering 200, say) is no
  // answer: shown as an error, never as an empty list or a blank report.
  if (res.ok && text !== '' && !json) {
    throw new ApiError(
      res.status,
      'unexpected_answer',
      `The service answered ${res.status} with something that is not its JSON: is a proxy or a sign-in page in the way?`,
    );
  }
  if (!res.ok) {
    const envelope = (data ?? {}) as { error?: unknown; message?: unknown; details?: unknown };
    const message = typeof envelope.message === 'string' && envelope.message.trim() !== '' ? envelope.message : describeStatus(res);
    const code = typeof envelope.error === 'string' ? envelope.error : `http_${res.status}`;
    const error = new ApiError(res.status, code, message, envelope.details);
    if (res.status === 401 && options.key === undefined) unauthorizedHandler?.(error);
    throw error;
  }
  return { status: res.status, data: data as T, next: nextCursor(res.headers.get('link')) };
}

/**
 * A file the API answers (an Overlay, a stored version of a document), fetched with the key in
 * the Authorization header (never in a URL) and saved through a Blob: the browser's download.
 */
export async function downloadFile(path: string, fileName: string, options: { accept?: string } = {}): Promise<void> {
  const url = new URL(path.replace(/^\/+/, ''), document.baseURI);
  const key = session.get();
  const headers: Record<string, string> = { accept: options.accept ?? 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  let res: Response;
  try {
    res = await fetch(url, { headers, cache: 'no-store', credentials: 'omit' });
  } catch {
    throw new ApiError(0, 'network_error', 'Could not reach the service. Check that it is running and that this computer is online.');
  }
  if (!res.ok) {
    let envelope: { error?: unknown; message?: unknown; details?: unknown } = {};
    try {
      envelope = (await res.json()) ?? {};
    } catch {
      /* not JSON: described by its status */
    }
    const message = typeof envelope.message === 'string' && envelope.message.trim() !== '' ? envelope.message : describeStatus(res);
    const error = new ApiError(res.status, typeof envelope.error === 'string' ? envelope.error : `http_${res.status}`, message, envelope.details);
    if (res.status === 401) unauthorizedHandler?.(error);
    throw error;
  }
  const blob = await res.blob();
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = fileName;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // After the click has started the download.
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

// ——— The resources: the server's own wire types (type-only imports) ———

export type { Copilot, CopilotStatus, KnowledgeBaseLink, SearchResult } from '../../src/domain/wire.js';
export type { ApiKey, ApiKeyCreate, ApiKeyCreated, ApiKeyIdentity, AuditEntry } from '../../src/domain/wire.js';
export type CopilotChanges = CopilotPatch;
export type { ApiDescriptionChange, ApiDescriptionSync, ApiDescriptionVersion, CopilotTools, ToolDefinition };
/** What POST …/swagger/sync answers. */
export interface SyncResult {
  status: 'unchanged' | 'changed' | 'failed';
  version: number | null;
  changes: { breaking: number; other: number } | null;
  error: string | null;
  next_sync_at: string;
}
export type DeleteLinksResult = LinksDeleted;
export type { CopilotSummary } from '../../src/domain/copilots/copilot-summaries.js';

const copilotPath = (id: string) => `/backend/api/copilot/${encodeURIComponent(id)}`;
const kbPath = (botId: string) => `/backend/knowledgebase/b/${encodeURIComponent(botId)}`;

export const api = {
  /** Checks a key before keeping it: any answer but 401 means the key is known. */
  async checkKey(key: string): Promise<ApiKeyIdentity> {
    // Any valid key may read its own identity, whatever its scopes.
    return (await request<ApiKeyIdentity>('GET', '/backend/api/keys/me', { key })).data;
  },
  /** The signed-in key: who it is and what it may do (the dashboard offers only that). */
  async me(signal?: AbortSignal): Promise<ApiKeyIdentity> {
    return (await request<ApiKeyIdentity>('GET', '/backend/api/keys/me', { signal })).data;
  },
  async listKeys(signal?: AbortSignal): Promise<ApiKey[]> {
    return (await request<ApiKey[]>('GET', '/backend/api/keys', { signal })).data;
  },
  async createKey(input: ApiKeyCreate): Promise<ApiKeyCreated> {
    return (await request<ApiKeyCreated>('POST', '/backend/api/keys', { json: input })).data;
  },
  async revokeKey(id: string): Promise<void> {
    await request('DELETE', `/backend/api/keys/${encodeURIComponent(id)}`);
  },
  listAudit(query: AuditFilters & { cursor?: string | null; limit: number }, signal?: AbortSignal) {
    return request<AuditEntry[]>('GET', '/backend/api/audit', { query: { ...query }, signal });
  },
  /** Every copilot the key may list (following the pages, up to 10,000): for pickers of bots. */
  async allCopilots(signal?: AbortSignal): Promise<Copilot[]> {
    const all: Copilot[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res: ApiResponse<Copilot[]> = await request('GET', '/backend/api/copilots', { query: { limit: 1000, cursor }, signal });
      all.push(...res.data);
      cursor = res.next;
      if (!cursor) break;
    }
    return all;
  },

  listCopilots(query: { q?: string; status?: string; cursor?: string | null; limit: number }, signal?: AbortSignal) {
    return request<Copilot[]>('GET', '/backend/api/copilots', { query, signal });
  },
  async getCopilot(id: string, signal?: AbortSignal): Promise<Copilot> {
    return (await request<Copilot>('GET', copilotPath(id), { signal })).data;
  },
  async createCopilot(input: CopilotCreate): Promise<Copilot> {
    return (await request<Copilot>('POST', '/backend/api/copilots', { json: input })).data;
  },
  async updateCopilot(id: string, changes: CopilotChanges): Promise<Copilot> {
    return (await request<Copilot>('PATCH', copilotPath(id), { json: changes })).data;
  },
  async deleteCopilot(id: string): Promise<Copilot> {
    return (await request<Copilot>('DELETE', copilotPath(id))).data;
  },
  /** Multipart, so the service keeps the file's own name beside the generated one (issue 17). */
  async uploadDescription(id: string, file: Blob, contentType: string, fileName?: string): Promise<Copilot> {
    const form = new FormData();
    form.append('file', new Blob([file], { type: contentType }), fileName ?? (file instanceof File ? file.name : 'api-description'));
    return (await request<Copilot>('PUT', `${copilotPath(id)}/swagger`, { body: form })).data;
  },
  /** The named copilots' uploaded file names and readiness at upload, from what is stored (nothing validated). */
  async copilotSummaries(ids: readonly string[], signal?: AbortSignal): Promise<CopilotSummary[]> {
    if (ids.length === 0) return [];
    return (await request<CopilotSummary[]>('GET', '/backend/api/copilots/summaries', { query: { ids: ids.join(',') }, signal })).data;
  },
  async validate(id: string, signal?: AbortSignal): Promise<ValidatorResult> {
    return (await request<ValidatorResult>('GET', `${copilotPath(id)}/validator`, { signal, reviver: revivedShown })).data;
  },
  /** The tool definitions an LLM on `platform` would be given (issue 18). */
  async tools(id: string, platform: string, signal?: AbortSignal): Promise<CopilotTools> {
    return (await request<CopilotTools>('GET', `${copilotPath(id)}/tools`, { query: { platform }, signal, reviver: revivedShown })).data;
  },
  /** Saves the computable fixes as an OpenAPI Overlay file. */
  downloadFixes(id: string, fileName: string): Promise<void> {
    return downloadFile(`${copilotPath(id)}/fixes`, fileName);
  },
  /** A page of the API description's versions, newest first (issue 16). */
  listVersions(id: string, cursor: string | null, signal?: AbortSignal, limit = 50) {
    return request<ApiDescriptionVersion[]>('GET', `${copilotPath(id)}/swagger/versions`, { query: { limit, cursor }, signal });
  },
  /** A page of the changes between versions, newest version first. */
  listChanges(id: string, cursor: string | null, signal?: AbortSignal) {
    return request<ApiDescriptionChange[]>('GET', `${copilotPath(id)}/swagger/changes`, { query: { limit: 200, cursor }, signal, reviver: revivedShown });
  },
  downloadVersion(id: string, version: number, fileName: string): Promise<void> {
    return downloadFile(`${copilotPath(id)}/swagger/versions/${version}`, fileName, { accept: 'application/json, application/yaml' });
  },
  async syncState(id: string, signal?: AbortSignal): Promise<ApiDescriptionSync> {
    return (await request<ApiDescriptionSync>('GET', `${copilotPath(id)}/swagger/sync`, { signal })).data;
  },
  async syncNow(id: string): Promise<SyncResult> {
    return (await request<SyncResult>('POST', `${copilotPath(id)}/swagger/sync`)).data;
  },

  /** Every link of a knowledge base (following the pages), or null when the bot has none yet. */
  async listLinks(botId: string, signal?: AbortSignal): Promise<KnowledgeBaseLink[] | null> {
    const links: KnowledgeBaseLink[] = [];
    let cursor: string | null = null;
    try {
      for (let page = 0; page < 20; page++) {
        const res: ApiResponse<KnowledgeBaseLinks> = await request('GET', kbPath(botId), { query: { limit: 1000, cursor }, signal });
        links.push(...res.data.links);
        cursor = res.next;
        if (!cursor) break;
      }
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== 'knowledge_base_not_found') throw err;
      // The API answers so for a bot without links and for a copilot deleted meanwhile alike:
      // the copilot tells them apart (its 404 is the screen's error, not "No links yet").
      await api.getCopilot(botId, signal);
      return null;
    }
    return links;
  },
  async addLinks(botId: string, links: string[]): Promise<void> {
    await request('POST', kbPath(botId), { json: { links } });
  },
  async deleteLinks(botId: string, links: string[]): Promise<DeleteLinksResult> {
    return (await request<DeleteLinksResult>('DELETE', kbPath(botId), { json: { links } })).data;
  },
  /** Starts a crawl of a site or a sitemap into the knowledge base (issue 16 §2). */
  async startCrawl(botId: string, input: CrawlRequest): Promise<Crawl> {
    return (await request<Crawl>('POST', `${kbPath(botId)}/crawl`, { json: input })).data;
  },
  async getCrawl(botId: string, crawlId: string, signal?: AbortSignal): Promise<Crawl> {
    return (await request<Crawl>('GET', `${kbPath(botId)}/crawls/${encodeURIComponent(crawlId)}`, { signal })).data;
  },
  /** The latest crawl of the bot, or null (none yet, or no knowledge base). */
  async latestCrawl(botId: string, signal?: AbortSignal): Promise<Crawl | null> {
    try {
      return (await request<Crawls>('GET', `${kbPath(botId)}/crawls`, { query: { limit: 1 }, signal })).data.crawls[0] ?? null;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'knowledge_base_not_found') return null;
      throw err;
    }
  },
  async cancelCrawl(botId: string, crawlId: string): Promise<Crawl> {
    return (await request<Crawl>('DELETE', `${kbPath(botId)}/crawls/${encodeURIComponent(crawlId)}`)).data;
  },
  async search(botId: string, q: string, signal?: AbortSignal): Promise<SearchResult[]> {
    return (await request<SearchResults>('GET', `${kbPath(botId)}/search`, { query: { q, limit: 20 }, signal })).data.results;
  },
};
