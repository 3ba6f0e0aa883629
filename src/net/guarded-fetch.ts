/**
 * The one way the service fetches a URL a user gave it (API descriptions, DESIGN §5;
 * knowledge-base pages, DESIGN §6): http(s) only, one overall deadline, a size cap on the
 * decoded body, redirects followed by hand and re-checked, and only to addresses that
 * `isAddressAllowed` accepts. Names are resolved once per connection, inside the socket's
 * own lookup, so the socket connects to exactly the addresses that were checked (no DNS
 * rebinding between check and connect).
 *
 * Connections are kept alive between calls (one undici Agent per policy, `sharedAgent`): the
 * next page of a site reuses the connection — and the TLS session — of the one before, to the
 * same checked address. A connection is only ever to an address checked when it was opened;
 * one a call gives up on mid-answer (deadline, size cap, slow body, cancel) is destroyed with
 * the request; an idle one closes after a few seconds.
 */
import dns from 'node:dns';
import net from 'node:net';
import zlib from 'node:zlib';
import type { ReadableStream } from 'node:stream/web';
import { LRUCache } from 'lru-cache';
import { Agent, buildConnector, type Dispatcher, fetch } from 'undici';
import { addressRange, isAddressAllowed, parseAllowNetworks } from './address-policy.js';
import type { FetchSettings } from '../config.js';
import { USER_AGENT } from './user-agent.js';

export { isAddressAllowed, parseAllowNetworks } from './address-policy.js';

export interface FetchPolicy {
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  /** CIDRs (IPv4 and IPv6) the operator allows even though they are not global unicast. */
  allowNetworks: string[];
  /**
   * Slowest body accepted: once the headers are in, every `minRateWindowMs` must bring at
   * least this many bytes per second (decoded), or the fetch fails with `too_slow`. So a
   * server dripping a byte at a time holds a fetch for one window, not the whole deadline.
   * Absent or 0: no minimum.
   */
  minBytesPerSecond?: number;
  /** The window the minimum rate is measured over (default 5000 ms). */
  minRateWindowMs?: number;
}

/** Redirects any fetch of the service (API descriptions, knowledge-base pages) may follow. */
export const MAX_REDIRECTS = 5;

/** The one fetch policy every fetch of the service runs under, from the configuration. */
export function fetchPolicyOf(config: FetchSettings): FetchPolicy {
  return {
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.maxDocumentBytes,
    maxRedirects: MAX_REDIRECTS,
    allowNetworks: [...config.fetchAllowNetworks],
    minBytesPerSecond: config.fetchMinBytesPerSecond,
    minRateWindowMs: config.fetchMinRateWindowMs,
  };
}

export interface FetchedResource {
  /** Final URL after redirects. */
  url: string;
  status: number;
  contentType: string | null;
  /** The decoded body (Content-Encoding removed), at most `maxBytes` long; empty for a 304. */
  body: Buffer;
  /** The validators a later conditional request sends back (`init.conditional`). */
  etag: string | null;
  lastModified: string | null;
}

export type FetchErrorKind =
  | 'bad_url'
  | 'refused'
  | 'timeout'
  | 'too_large'
  | 'too_many_redirects'
  | 'http_status'
  | 'network'
  /** The body arrived slower than `minBytesPerSecond`. */
  | 'too_slow'
  /** An answer that is not well-formed: not HTTP, headers too large, an undecodable content coding. Final: retrying gets the same. */
  | 'bad_response';

/**
 * A fetch that did not produce a 2xx body. `message` is one sentence meant for a person;
 * `url` is the URL being fetched when it failed (a redirect target for a refused or bad
 * redirect); `status` is set for `http_status`.
 */
export class FetchError extends Error {
  readonly kind: FetchErrorKind;
  readonly url: string;
  readonly status?: number;

  constructor(kind: FetchErrorKind, url: string, message: string, status?: number) {
    super(message);
    this.name = 'FetchError';
    this.kind = kind;
    this.url = url;
    if (status !== undefined) this.status = status;
  }
}

/** A failure that may pass (a timeout, the network, a 5xx, 429 or 408): worth trying again later. */
export function isTransientFetchError(err: FetchError): boolean {
  if (err.kind === 'timeout' || err.kind === 'network') return true;
  return err.kind === 'http_status' && err.status !== undefined && (err.status >= 500 || err.status === 429 || err.status === 408);
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Seams for tests only; production callers never pass these.
 * `resolve` replaces DNS; `onConnected` is told the remote address of every socket opened.
 */
export interface GuardedFetchHooks {
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
  onConnected?: (remoteAddress: string, remotePort: number, hostname: string) => void;
}

export { USER_AGENT };

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

type ConnectorReturningSocket = (options: buildConnector.Options, callback: buildConnector.Callback) => net.Socket | undefined;

/** Per-call state shared between the request loop and the timer. */
interface CallState {
  currentUrl: string;
  /** The first failure decided by us (deadline, size cap, slow body); wins over whatever undici reports. */
  failure: FetchError | null;
}

/**
 * Fetch `url` under `policy`. Resolves with the final 2xx response and its decoded body (or,
 * for a conditional request, a 304 with an empty body); rejects with a `FetchError`, or with
 * `init.signal.reason` when the caller aborts.
 */
export async function fetchGuarded(
  url: string,
  policy: FetchPolicy,
  init: {
    accept?: string;
    signal?: AbortSignal;
    conditional?: { etag: string | null; lastModified: string | null };
    /** A POST (webhooks): its body and headers; a redirect is not followed (it would send the body elsewhere). */
    post?: { body: string; headers: Record<string, string> };
    /** Only the status matters (a webhook's answer): a 2xx body is not read (nor its size held to the limit), and `body` is empty. */
    statusOnly?: boolean;
    /** Only the first bytes matter (a robots.txt, of which 500 KiB are read): the body is read to this many and no further, whatever its size. */
    prefixBytes?: number;
  } = {},
  hooks: GuardedFetchHooks = {},
): Promise<FetchedResource> {
  assertPolicy(policy);
  const callerSignal = init.signal;
  if (callerSignal?.aborted) throw callerSignal.reason;

  const state: CallState = { currentUrl: url, failure: null };
  const controller = new AbortController();
  const fail = (error: FetchError): FetchError => {
    state.failure ??= error;
    controller.abort(state.failure);
    return state.failure;
  };
  const timer = setTimeout(() => {
    fail(
      new FetchError('timeout', state.currentUrl, `${describeHost(state.currentUrl)} did not answer completely within ${formatDuration(policy.timeoutMs)}.`),
    );
  }, policy.timeoutMs);
  const onCallerAbort = (): void => controller.abort(callerSignal?.reason);
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true });

  // The policy's shared agent; with test hooks, an agent of the call's own, closed with it.
  const own = hooks.resolve !== undefined || hooks.onConnected !== undefined;
  const agent = own ? createAgent(policy, hooks) : sharedAgent(policy);
  try {
    let target = checkUrl(url, policy.allowNetworks, null);
    for (let redirects = 0; ; redirects++) {
      state.currentUrl = target.href;
      const send = () =>
        fetch(target, {
          method: init.post ? 'POST' : 'GET',
          redirect: 'manual',
          dispatcher: agent,
          signal: controller.signal,
          ...(init.post && { body: init.post.body }),
          headers: {
            ...init.post?.headers,
            'user-agent': USER_AGENT,
            accept: init.accept ?? '*/*',
            ...(init.conditional?.etag && { 'if-none-match': init.conditional.etag }),
            ...(init.conditional?.lastModified && { 'if-modified-since': init.conditional.lastModified }),
          },
        });
      // A kept connection may be one the server closed as the request went out (its idle
      // timeout): a GET is sent once more, on a new connection, as browsers do. Only when the
      // pool held an idle connection to take: a new connection closed unanswered is the answer.
      const mayBeKept = idleConnections(agent, target.origin) > 0;
      const response = await send().catch((err: unknown) => {
        if (!mayBeKept || init.post || state.failure !== null || controller.signal.aborted || !closedUnderUs(err)) throw err;
        return send();
      });
      const { status } = response;
      const validators = { etag: response.headers.get('etag'), lastModified: response.headers.get('last-modified') };
      if (status === 304 && init.conditional) {
        await discardBody(response.body);
        return { url: target.href, status, contentType: response.headers.get('content-type'), body: Buffer.alloc(0), ...validators };
      }

      if (REDIRECT_STATUSES.has(status) && !init.post) {
        await discardBody(response.body);
        const location = response.headers.get('location');
        if (location === null || location.trim() === '') {
          throw new FetchError(
            'http_status',
            target.href,
            `${describeHost(target.href)} answered with a redirect (HTTP ${status}) that names no Location.`,
            status,
          );
        }
        if (redirects >= policy.maxRedirects) {
          throw new FetchError(
            'too_many_redirects',
            target.href,
            `The URL redirected more than ${policy.maxRedirects} time${policy.maxRedirects === 1 ? '' : 's'}.`,
          );
        }
        target = checkUrl(location, policy.allowNetworks, target);
        continue;
      }

      if (status < 200 || status > 299) {
        await discardBody(response.body);
        throw new FetchError('http_status', target.href, `${describeHost(target.href)} answered with HTTP status ${status}.`, status);
      }

      if (init.statusOnly) {
        await discardBody(response.body);
        return { url: target.href, status, contentType: response.headers.get('content-type'), body: Buffer.alloc(0), ...validators };
      }
      const declared = response.headers.get('content-length');
      const declaredBytes = declared !== null && /^\d+$/.test(declared.trim()) ? Number(declared) : null;
      const limit = init.prefixBytes === undefined ? policy.maxBytes : Math.min(init.prefixBytes, policy.maxBytes);
      if (init.prefixBytes === undefined && declaredBytes !== null && declaredBytes > policy.maxBytes) {
        throw fail(tooLarge(target.href, policy.maxBytes));
      }
      const encoding = response.headers.get('content-encoding');
      const coding = undecodableCoding(encoding);
      if (coding !== null) {
        await discardBody(response.body);
        throw new FetchError(
          'bad_response',
          target.href,
          `The response from ${hostOf(target.href)} uses a content coding (${coding}) that cannot be decoded; gzip, deflate and br are supported.`,
        );
      }
      const meter = rateMeter(policy, () => fail(tooSlow(target.href, policy)));
      try {
        // The declared length of an unencoded body sizes the buffer it is read into.
        const sizeHint = encoding === null ? (declaredBytes ?? 0) : 0;
        const tooMuch = init.prefixBytes === undefined ? () => fail(tooLarge(target.href, policy.maxBytes)) : null;
        const body = await readCapped(response.body, limit, tooMuch, meter.add, sizeHint);
        return { url: target.href, status, contentType: response.headers.get('content-type'), body, ...validators };
      } finally {
        meter.stop();
      }
    }
  } catch (error) {
    if (state.failure !== null) throw state.failure;
    if (error instanceof FetchError) throw error;
    if (callerSignal?.aborted) throw callerSignal.reason;
    throw networkError(error, state.currentUrl, policy.timeoutMs);
  } finally {
    clearTimeout(timer);
    callerSignal?.removeEventListener('abort', onCallerAbort);
    if (own) await agent.destroy().catch(() => undefined);
  }
}

/** Idle connections are closed after this long (or sooner, when the server says so). */
const KEEP_ALIVE_MS = 4_000;

// One agent per policy (its allowed networks and deadline): in the service, one. Its sockets
// are unref'd (createAgent), so nothing needs closing at exit.
const sharedAgents = new LRUCache<string, Agent>({
  max: 16,
  dispose: (agent) => void agent.close().catch(() => undefined),
});

function sharedAgent(policy: FetchPolicy): Agent {
  const key = JSON.stringify([policy.allowNetworks, policy.timeoutMs]);
  const kept = sharedAgents.get(key);
  if (kept !== undefined) return kept;
  const agent = createAgent(policy, {});
  sharedAgents.set(key, agent);
  return agent;
}

function assertPolicy(policy: FetchPolicy): void {
  const { timeoutMs, maxBytes, maxRedirects, allowNetworks } = policy;
  // setTimeout fires at once beyond 2^31-1 ms, which would turn a huge deadline into none.
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0 && timeoutMs <= 2 ** 31 - 1)) {
    throw new Error('FetchPolicy.timeoutMs must be a positive number of milliseconds (at most 2147483647).');
  }
  if (!(Number.isSafeInteger(maxBytes) && maxBytes >= 0)) throw new Error('FetchPolicy.maxBytes must be a non-negative integer.');
  if (!(Number.isSafeInteger(maxRedirects) && maxRedirects >= 0)) throw new Error('FetchPolicy.maxRedirects must be a non-negative integer.');
  const { minBytesPerSecond = 0, minRateWindowMs = DEFAULT_RATE_WINDOW_MS } = policy;
  if (!(Number.isSafeInteger(minBytesPerSecond) && minBytesPerSecond >= 0)) throw new Error('FetchPolicy.minBytesPerSecond must be a non-negative integer.');
  if (!(Number.isSafeInteger(minRateWindowMs) && minRateWindowMs > 0 && minRateWindowMs <= 2 ** 31 - 1)) {
    throw new Error('FetchPolicy.minRateWindowMs must be a positive number of milliseconds (at most 2147483647).');
  }
  parseAllowNetworks(allowNetworks.join(','));
}

/**
 * Parse `raw` (relative to `base` when it is a redirect's Location) and apply the URL
 * rules: http(s) only, no credentials, and an IP-literal host must be allowed. Names are
 * checked later, when the socket resolves them.
 */
function checkUrl(raw: string, allowNetworks: string[], base: URL | null): URL {
  const via = base === null ? '' : `${describeHost(base.href)} redirected to `;
  let parsed: URL;
  try {
    parsed = base === null ? new URL(raw) : new URL(raw, base);
  } catch {
    throw new FetchError('bad_url', raw, base === null ? 'The URL is not a valid absolute URL.' : `${via}an address that is not a valid URL.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new FetchError(
      'bad_url',
      parsed.href,
      `${base === null ? 'The URL uses' : `${via}a URL using`} ${parsed.protocol}; only http: and https: URLs can be fetched.`,
    );
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new FetchError(
      'bad_url',
      redactCredentials(parsed),
      `${base === null ? 'The URL contains' : `${via}a URL containing`} a user name or password, which is not accepted.`,
    );
  }
  const literal = ipLiteral(parsed.hostname);
  if (literal !== null && !isAddressAllowed(literal, allowNetworks)) {
    throw refused(parsed.href, literal, null);
  }
  return parsed;
}

function redactCredentials(url: URL): string {
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

/** The IP address a URL hostname spells (brackets removed), or null for a name. */
function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return net.isIP(bare) === 0 ? null : bare;
}

/**
 * The refusal of `address`. An address the URL spells itself is named with its range; for a
 * host name, neither the address nor its range is told, so that whoever may store a URL
 * cannot map the internal network's DNS through refusals (issue 13 §6).
 */
function refused(url: string, address: string, hostname: string | null): FetchError {
  if (hostname !== null) {
    return new FetchError('refused', url, `The host name ${hostname} resolves to an address that is not public; only public addresses can be fetched.`);
  }
  const range = addressRange(address);
  const why = range === null || range === 'unicast' ? '' : ` (${RANGE_WORDS[range] ?? 'a reserved or special-purpose range'})`;
  return new FetchError('refused', url, `The address ${address} is not allowed${why}.`);
}

const RANGE_WORDS: Record<string, string> = {
  cloudMetadata: 'cloud metadata service',
  loopback: 'loopback',
  private: 'private network',
  linkLocal: 'link-local, including cloud metadata',
  uniqueLocal: 'unique-local network',
  carrierGradeNat: 'carrier-grade NAT, including cloud metadata',
  multicast: 'multicast',
  unspecified: 'unspecified address',
  broadcast: 'broadcast',
  ipv4Mapped: 'IPv4-mapped',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64, embeds an IPv4 address',
  '6to4': '6to4, embeds an IPv4 address',
  teredo: 'Teredo, embeds an IPv4 address',
};

function createAgent(policy: FetchPolicy, hooks: GuardedFetchHooks): Agent {
  const resolve = hooks.resolve ?? systemResolve;

  // Called by net.connect for host names (never for IP literals, which checkUrl judged).
  // Resolves once, refuses the name if ANY of its addresses is refused, and hands the
  // socket only those checked addresses.
  const lookup = (
    hostname: string,
    options: dns.LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void,
  ): void => {
    checkedAddresses(hostname, policy.allowNetworks, resolve).then(
      (all) => {
        const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
        if (wanted.length === 0) {
          callback(Object.assign(new Error(`No IPv${options.family} address for ${hostname}.`), { code: 'ENOTFOUND' }), '');
        } else if (options.all) {
          callback(
            null,
            wanted.map((a) => ({ address: a.address, family: a.family })),
          );
        } else {
          callback(null, wanted[0].address, wanted[0].family);
        }
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };

  const baseConnect = buildConnector({ lookup, timeout: policy.timeoutMs }) as unknown as ConnectorReturningSocket;
  const onConnected = hooks.onConnected;
  const connect: buildConnector.connector = (options, callback) => {
    // undici's connector returns the socket it opens (its type says void).
    const socket = baseConnect(options, callback);
    // A socket kept for the next call never holds the process open (the CLI exits when done);
    // a call in flight does, through its deadline's timer.
    socket?.unref();
    // Report the TCP connection itself, before any TLS handshake can fail.
    if (onConnected) socket?.once('connect', () => onConnected(socket.remoteAddress ?? '', socket.remotePort ?? 0, options.hostname));
  };

  // compose answers the agent itself (a proxy with this dispatch), so its pools' stats stay readable.
  return new Agent({
    connect,
    headersTimeout: policy.timeoutMs,
    bodyTimeout: policy.timeoutMs,
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_MS,
  }).compose((dispatch) => (options, handler) => dispatch(options, new InformationalLimit(handler, `${options.origin ?? ''}${options.path}`))) as Agent;
}

/**
 * Informational (1xx) answers one request may be sent before its answer. undici reads any number
 * (and restarts its headers timeout at each), so a server sending them without end kept the
 * process busy parsing them until the deadline, every other client waiting (outbound sweep).
 */
const MAX_INFORMATIONAL = 20;

/** A request's handler that refuses its answer past MAX_INFORMATIONAL informational ones. */
class InformationalLimit implements Dispatcher.DispatchHandler {
  private informational = 0;

  constructor(
    private readonly handler: Dispatcher.DispatchHandler,
    private readonly url: string,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.handler.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.handler.onRequestUpgrade?.(...args);
  }

  onResponseStart(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>): void {
    const [controller, statusCode] = args;
    if (statusCode < 200 && ++this.informational > MAX_INFORMATIONAL) {
      const message = `${describeHost(this.url)} sent more than ${MAX_INFORMATIONAL} informational (1xx) answers before its answer.`;
      controller.abort(new FetchError('bad_response', this.url, message));
      return;
    }
    this.handler.onResponseStart?.(...args);
  }

  onResponseData(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseData']>>): void {
    this.handler.onResponseData?.(...args);
  }

  onResponseEnd(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>): void {
    this.handler.onResponseEnd?.(...args);
  }

  onResponseError(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseError']>>): void {
    this.handler.onResponseError?.(...args);
  }
}

async function checkedAddresses(
  hostname: string,
  allowNetworks: string[],
  resolve: (hostname: string) => Promise<ResolvedAddress[]>,
): Promise<ResolvedAddress[]> {
  const literal = ipLiteral(hostname);
  const addresses: ResolvedAddress[] = literal !== null ? [{ address: literal, family: net.isIP(literal) === 6 ? 6 : 4 }] : await resolve(hostname);
  if (addresses.length === 0) {
    throw Object.assign(new Error(`${hostname} has no address.`), { code: 'ENOTFOUND' });
  }
  for (const { address } of addresses) {
    if (!isAddressAllowed(address, allowNetworks)) throw new AddressRefused(address, literal === null ? hostname : null);
  }
  return addresses;
}

/**
 * The socket lookup's refusal of an address. The connection belongs to no one call (it may
 * serve several), so the call that meets it makes it its FetchError, with the URL it was
 * fetching (`networkError`).
 */
class AddressRefused extends Error {
  constructor(
    readonly address: string,
    readonly hostname: string | null,
  ) {
    super('The address is not allowed.');
    this.name = 'AddressRefused';
  }
}

async function systemResolve(hostname: string): Promise<ResolvedAddress[]> {
  const answers = await dns.promises.lookup(hostname, { all: true, order: 'verbatim' });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

async function discardBody(body: ReadableStream | null): Promise<void> {
  if (body !== null) await body.cancel().catch(() => undefined);
}

const DEFAULT_RATE_WINDOW_MS = 5000;

/**
 * Counts the body's bytes and, every window, fails the fetch (`onTooSlow`) when the window
 * brought fewer than `minBytesPerSecond` per second. Started once the headers are in.
 */
function rateMeter(policy: FetchPolicy, onTooSlow: () => void): { add: (bytes: number) => void; stop: () => void } {
  const { minBytesPerSecond = 0, minRateWindowMs = DEFAULT_RATE_WINDOW_MS } = policy;
  if (minBytesPerSecond === 0) return { add: () => undefined, stop: () => undefined };
  const needed = (minBytesPerSecond * minRateWindowMs) / 1000;
  let received = 0;
  const timer = setInterval(() => {
    if (received < needed) {
      clearInterval(timer);
      onTooSlow();
    }
    received = 0;
  }, minRateWindowMs);
  return {
    add: (bytes) => {
      received += bytes;
    },
    stop: () => clearInterval(timer),
  };
}

function tooSlow(url: string, policy: FetchPolicy): FetchError {
  const { minBytesPerSecond = 0, minRateWindowMs = DEFAULT_RATE_WINDOW_MS } = policy;
  return new FetchError(
    'too_slow',
    url,
    `${describeHost(url)} sent its answer too slowly (less than ${formatBytes(minBytesPerSecond)} per second over ${formatDuration(minRateWindowMs)}).`,
  );
}

// The codings undici's fetch decodes (it passes any other through still encoded).
const DECODABLE_CODINGS = new Set([
  'gzip',
  'x-gzip',
  'deflate',
  'br',
  ...(typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function' ? ['zstd'] : []),
]);

/** The first content coding of a Content-Encoding header that the body cannot be decoded from, or null. */
function undecodableCoding(header: string | null): string | null {
  if (header === null || header.trim() === '' || header.trim().toLowerCase() === 'identity') return null;
  for (const token of header.split(',')) {
    const coding = token.trim().toLowerCase();
    // Shown to users: echo only what looks like a coding name.
    if (!DECODABLE_CODINGS.has(coding)) return /^[\w.+-]{1,32}$/.test(coding) ? coding : 'unknown';
  }
  return null;
}

/**
 * Read the whole body, never holding more than `maxBytes`; `onTooLarge` aborts and returns
 * the error (null: the first `maxBytes` are the body, the rest is not read). `onBytes` is told
 * the size of every chunk read.
 */
async function readCapped(
  body: ReadableStream | null,
  maxBytes: number,
  onTooLarge: (() => FetchError) | null,
  onBytes: (bytes: number) => void = () => undefined,
  sizeHint = 0,
): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  const reader = body.getReader();
  // A body of a declared length is copied chunk by chunk, as it arrives, into a buffer of that
  // length (one copy of a whole 25 MiB page at the end held the event loop for tens of
  // milliseconds); other bodies are joined at the end. Either way the buffer is the body's own,
  // so that it can move to a task thread without a copy.
  const whole = sizeHint > 0 ? Buffer.allocUnsafeSlow(Math.min(sizeHint, maxBytes)) : null;
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = (await reader.read()) as ReadableStreamReadResult<Uint8Array>;
    if (done) break;
    if (total + value.byteLength > maxBytes) {
      if (onTooLarge === null) {
        await reader.cancel().catch(() => undefined);
        chunks.push(...(whole !== null && chunks.length === 0 ? [whole.subarray(0, total)] : []));
        chunks.push(Buffer.from(value.buffer, value.byteOffset, maxBytes - total));
        return Buffer.concat(chunks, maxBytes);
      }
      const error = onTooLarge();
      await reader.cancel(error).catch(() => undefined);
      throw error;
    }
    if (whole !== null && chunks.length === 0 && total + value.byteLength <= whole.length) whole.set(value, total);
    else {
      // Longer than declared: joined at the end after all.
      if (whole !== null && chunks.length === 0) chunks.push(whole.subarray(0, total));
      chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
    }
    total += value.byteLength;
    onBytes(value.byteLength);
  }
  if (whole !== null && chunks.length === 0) return total === whole.length ? whole : Buffer.from(whole.subarray(0, total));
  return Buffer.concat(chunks, total);
}

function tooLarge(url: string, maxBytes: number): FetchError {
  return new FetchError('too_large', url, `The response from ${hostOf(url)} is larger than the limit of ${formatBytes(maxBytes)}.`);
}

/** How many connections to `origin` the agent keeps open and unused (its pool's `free`). */
function idleConnections(agent: Agent, origin: string): number {
  // An Agent without a `connections` limit keeps a Pool per origin, whose stats count them.
  const stats = agent.stats[origin];
  return stats !== undefined && 'free' in stats ? stats.free : 0;
}

/** The connection closed before any answer came (reset, or closed by the other side). */
function closedUnderUs(error: unknown): boolean {
  let cursor: unknown = error;
  for (let depth = 0; cursor !== null && typeof cursor === 'object' && depth < 8; depth++) {
    const { code } = cursor as { code?: unknown };
    if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE') return true;
    cursor = (cursor as { cause?: unknown }).cause;
  }
  return false;
}

/** Turn whatever undici/net threw into a readable `network` (or `timeout`) error. */
function networkError(error: unknown, url: string, timeoutMs: number): FetchError {
  const codes: string[] = [];
  const messages: string[] = [];
  const names: string[] = [];
  let cursor: unknown = error;
  for (let depth = 0; cursor !== null && typeof cursor === 'object' && depth < 8; depth++) {
    if (cursor instanceof FetchError) return cursor;
    if (cursor instanceof AddressRefused) return refused(url, cursor.address, cursor.hostname);
    const { code, message, name } = cursor as { code?: unknown; message?: unknown; name?: unknown };
    if (typeof code === 'string') codes.push(code);
    if (typeof message === 'string') messages.push(message);
    if (typeof name === 'string') names.push(name);
    cursor = (cursor as { cause?: unknown }).cause;
  }
  if (messages.includes('bad port')) {
    // The fetch standard's blocked ports (SMTP, SSH, …): refused like a forbidden address.
    let port = '';
    try {
      port = new URL(url).port;
    } catch {
      // keep the generic wording
    }
    return new FetchError('refused', url, `Port ${port || 'of this URL'} is not allowed for fetching.`);
  }
  const server = describeHost(url);
  const host = hostOf(url);
  const has = (...wanted: string[]): boolean => codes.some((c) => wanted.includes(c));
  // Malformed answers: the same server answers the same way on a retry, so these are final.
  if (
    codes.some((c) => c.startsWith('Z_') || c.startsWith('ERR_BROTLI') || c.startsWith('ERR__ERROR') || c.startsWith('ERR__ZLIB')) ||
    messages.includes('Decompression failed')
  ) {
    return new FetchError('bad_response', url, `The response from ${host} could not be decompressed.`);
  }
  if (messages.some((m) => m.startsWith('too many content-encodings'))) {
    return new FetchError('bad_response', url, `The response from ${host} names more content codings than can be decoded.`);
  }
  if (has('UND_ERR_HEADERS_OVERFLOW')) {
    return new FetchError('bad_response', url, `The response from ${host} has headers larger than this service accepts.`);
  }
  // An answer framed two ways at once (two Content-Lengths, one beside chunked coding): undici
  // reads its length one way and finds it another.
  if (names.includes('HTTPParserError') || codes.some((c) => c.startsWith('HPE_')) || has('UND_ERR_RES_CONTENT_LENGTH_MISMATCH')) {
    return new FetchError('bad_response', url, `${server} sent an answer that is not valid HTTP.`);
  }
  if (has('UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT')) {
    return new FetchError('timeout', url, `${server} did not answer completely within ${formatDuration(timeoutMs)}.`);
  }
  let message: string;
  if (has('ENOTFOUND', 'EAI_AGAIN', 'EAI_NODATA', 'ENODATA', 'EAI_FAIL')) {
    message = `The host name ${hostnameOf(url)} could not be resolved.`;
  } else if (has('ECONNREFUSED')) {
    message = `${server} refused the connection.`;
  } else if (has('EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL')) {
    message = `${server} cannot be reached from this server.`;
  } else if (codes.some((c) => c.startsWith('ERR_TLS') || c.includes('CERT') || c === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE')) {
    message = `The TLS certificate of ${host} could not be verified.`;
  } else if (has('ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED')) {
    message = `The connection to ${host} was closed unexpectedly.`;
  } else {
    message = `The response from ${host} could not be received.`;
  }
  return new FetchError('network', url, message);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the server';
  }
}

function hostnameOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return 'the server';
  }
}

/** "The server at example.com:8080" style subject for messages. */
function describeHost(url: string): string {
  try {
    return `The server at ${new URL(url).host}`;
  } catch {
    return 'The server';
  }
}

function formatDuration(ms: number): string {
  if (ms % 1000 === 0) return `${ms / 1000} second${ms === 1000 ? '' : 's'}`;
  return `${ms} ms`;
}

function formatBytes(bytes: number): string {
  const units: Array<[number, string]> = [
    [1024 ** 3, 'GiB'],
    [1024 ** 2, 'MiB'],
    [1024, 'KiB'],
  ];
  for (const [size, unit] of units) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}
