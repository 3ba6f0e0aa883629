import type {
  Copilot,
  CopilotCreate,
  CopilotPatch,
  KnowledgeBaseLink,
  KnowledgeBaseLinks,
  LinksDeleted,
  SearchResult,
  SearchResults,
} from '../../src/domain/wire.js';
import { nextCursor } from './lib/link-header';
import type { ValidatorResult } from './lib/report-model';

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
  if (text !== '' && /json/i.test(res.headers.get('content-type') ?? '')) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
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

// ——— The resources: the server's own wire types (type-only imports) ———

export type { Copilot, CopilotStatus, KnowledgeBaseLink, SearchResult } from '../../src/domain/wire.js';
export type CopilotChanges = CopilotPatch;
export type DeleteLinksResult = LinksDeleted;

const copilotPath = (id: string) => `/backend/api/copilot/${encodeURIComponent(id)}`;
const kbPath = (botId: string) => `/backend/knowledgebase/b/${encodeURIComponent(botId)}`;

export const api = {
  /** Checks a key before keeping it: any answer but 401 means the key is known. */
  async checkKey(key: string): Promise<void> {
    try {
      await request('GET', '/backend/api/copilots', { key, query: { limit: 1 } });
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) return; // a valid key without copilots:read
      throw err;
    }
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
  async uploadDescription(id: string, file: Blob, contentType: string): Promise<Copilot> {
    return (await request<Copilot>('PUT', `${copilotPath(id)}/swagger`, { body: file, contentType })).data;
  },
  async validate(id: string, signal?: AbortSignal): Promise<ValidatorResult> {
    return (await request<ValidatorResult>('GET', `${copilotPath(id)}/validator`, { signal })).data;
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
      if (err instanceof ApiError && err.code === 'knowledge_base_not_found') return null;
      throw err;
    }
    return links;
  },
  async addLinks(botId: string, links: string[]): Promise<void> {
    await request('POST', kbPath(botId), { json: { links } });
  },
  async deleteLinks(botId: string, links: string[]): Promise<DeleteLinksResult> {
    return (await request<DeleteLinksResult>('DELETE', kbPath(botId), { json: { links } })).data;
  },
  async search(botId: string, q: string, signal?: AbortSignal): Promise<SearchResult[]> {
    return (await request<SearchResults>('GET', `${kbPath(botId)}/search`, { query: { q, limit: 20 }, signal })).data.results;
  },
};
