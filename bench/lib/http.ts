import { request } from 'undici';
import { percentile } from './stats.js';

export interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export async function send(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  opts: { headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Response> {
  const res = await request(url, { method, headers: opts.headers, body: opts.body });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body };
}

export async function json<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, key: string, payload?: unknown, expect = [200, 201, 202]): Promise<T> {
  const res = await send(method, url, {
    headers: { authorization: `Bearer ${key}`, ...(payload !== undefined && { 'content-type': 'application/json' }) },
    body: payload === undefined ? undefined : JSON.stringify(payload),
  });
  if (!expect.includes(res.status)) throw new Error(`${method} ${url} → ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
  return JSON.parse(res.body.toString('utf8')) as T;
}

/** Milliseconds for one GET, the whole body read; throws unless 200. */
export async function timedGet(url: string, headers: Record<string, string>): Promise<number> {
  const started = performance.now();
  const res = await send('GET', url, { headers });
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET ${url} → ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
  return ms;
}

export interface OpenLoop {
  /** Stops sending; resolves when every request sent has been answered. */
  stop(): Promise<Array<{ sentAt: number; ms: number; status: number }>>;
}

/**
 * Sends requests (GETs unless `request` says otherwise) at a fixed rate whatever the answers
 * (open loop), so a server that stalls is measured by how late its answers are, from the time
 * each request was due. `nextUrl` varies the URL per request (search queries); by default
 * every request is `url`.
 */
export function openLoop(
  url: string,
  headers: Record<string, string>,
  perSecond: number,
  nextUrl: () => string = () => url,
  request: { method: 'GET' | 'PATCH'; body?: string } = { method: 'GET' },
): OpenLoop {
  const samples: Array<{ sentAt: number; ms: number; status: number }> = [];
  const inFlight = new Set<Promise<void>>();
  const interval = 1000 / perSecond;
  const start = performance.now();
  let sent = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    const now = performance.now();
    while (start + sent * interval <= now) {
      const due = start + sent * interval;
      sent++;
      const p = send(request.method, nextUrl(), { headers, body: request.body })
        .then((res) => void samples.push({ sentAt: due, ms: performance.now() - due, status: res.status }))
        .catch(() => void samples.push({ sentAt: due, ms: performance.now() - due, status: 0 }))
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    timer = setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
  };
  let timer = setTimeout(tick, 0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      return samples;
    },
  };
}

export const p = percentile;
