import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import dotenv from 'dotenv';
import ipaddr from 'ipaddr.js';
import leven from 'leven';
import { KEY_FORMAT_DESCRIPTION, KEY_PATTERN } from './domain/auth/key-format.js';
// From the policy module, not guarded-fetch: config must not load the HTTP client (undici).
import { parseAllowNetworks } from './net/address-policy.js';
import { SCAN_TIME_LIMIT_MS } from './storage/scans.js';
import { LOCK_TIMEOUT_MS } from './storage/database.js';

/**
 * Knowledge-base jobs an instance runs at once unless KB_WORKERS says otherwise: a crawl's
 * window (HOST_CONCURRENCY in src/domain/knowledgebase/crawl.ts, pending links per crawl), so
 * that one crawl on an idle instance has as many pages in flight as it allows itself. A job
 * mostly waits (on the site, on the database), so fewer workers leave the machine idle: with
 * 2, a crawl of a local site went at less than half the pages per second (bench/README.md).
 */
export const DEFAULT_KB_WORKERS = 4;

/** Everything the service reads from its environment, validated once at start. */
export interface Config {
  readonly port: number;
  /** 127.0.0.1 by default: only this machine reaches the API and /metrics until HOST says otherwise (the container sets 0.0.0.0). */
  readonly host: string;
  readonly dataDir: string;
  /** `postgres://…` selects PostgreSQL; otherwise the embedded SQLite file under dataDir. */
  readonly databaseUrl: string | null;
  /** PostgreSQL: a connection that has not completed its start-up within this time fails. */
  readonly databaseConnectTimeoutMs: number;
  /** PostgreSQL: the longest a statement waits for a row another session locks (then 503); 0: without bound. */
  readonly databaseLockTimeoutMs: number;
  /** The longest one knowledge-base search may run (ms); past it, it is stopped and answered 429. */
  readonly searchTimeoutMs: number;
  /** How long a start waits for an unreachable database (retrying with backoff) before it gives up. */
  readonly databaseStartupTimeoutMs: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly allowAnonymousRead: boolean;
  readonly bodyLimitBytes: number;
  /** Bytes of request bodies one instance receives at once (a quarter for one key); past it, 503 (429 for the key). */
  readonly requestBodiesMaxBytes: number;
  /** Connections one client address may have open at once (0: no bound; not for loopback, nor behind TRUST_PROXY). */
  readonly maxConnectionsPerAddress: number;
  readonly maxDocumentBytes: number;
  readonly fetchTimeoutMs: number;
  readonly fetchAllowNetworks: readonly string[];
  /** Slowest body a knowledge-base fetch accepts, in bytes per second over each window (0: no minimum). */
  readonly fetchMinBytesPerSecond: number;
  readonly fetchMinRateWindowMs: number;
  readonly kbWorkers: number;
  readonly kbPollIntervalMs: number;
  /** Links one bot may have waiting to be indexed; adding more is refused (429). */
  readonly kbMaxPendingLinksPerBot: number;
  /** Passages one link may hold; a page that yields more fails. */
  readonly kbMaxPassagesPerLink: number;
  /** Passages one bot's knowledge base may hold; a page that would take it over fails. */
  readonly kbMaxPassagesPerBot: number;
  readonly validationCacheBytes: number;
  /** Threads for validating documents and extracting pages off the event loop. */
  readonly taskThreads: number;
  readonly shutdownTimeoutMs: number;
  /** Longest time a client may take to send one whole request (headers and body). */
  readonly requestTimeoutMs: number;
  /** Soft-deleted copilots are purged this many days after deletion; 0 keeps them until an admin purges them. */
  readonly purgeDeletedAfterDays: number;
  /** Webhook deliveries are deleted this many days after they were queued; 0 keeps them. */
  readonly webhookDeliveriesKeptDays: number;
  /** Audit entries are deleted this many days after they were written; 0 keeps them. */
  readonly auditLogKeptDays: number;
  /** Time between two syncs of a copilot's swagger_url (smart_sync = 1), ±10%. */
  readonly syncIntervalMs: number;
  /** Versions of an API description kept per copilot; older ones go with their changes. */
  readonly apiDescriptionVersionsKept: number;
  /** WEBHOOK_URL: where breaking changes of API descriptions are POSTed (guarded fetch); null: nowhere. */
  readonly webhookUrl: string | null;
  /** WEBHOOK_SECRET: the HMAC-SHA256 key of the `x-cms-signature` header (required with WEBHOOK_URL). */
  readonly webhookSecret: string | null;
  /** LOG_FORMAT: `pretty` (pino-pretty), `json`, or `auto`: pretty when stdout is a terminal. */
  readonly logFormat: 'auto' | 'json' | 'pretty';
  /** ADMIN_API_KEY: stored as the first admin key when the database holds none (never logged). */
  readonly adminApiKey: string | null;
  /** METRICS_TOKEN: when set, /metrics answers only `Authorization: Bearer <token>`. */
  readonly metricsToken: string | null;
  /** TRUST_PROXY, as Fastify's trustProxy: which peers' X-Forwarded-For / -Proto / -Host count. */
  readonly trustProxy: boolean | readonly string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * The memory a task thread may take to parse a document, per byte of the document, at worst:
 * 25 MiB of empty arrays took about 630 MiB above the service at rest (25 times its size; bench
 * section 2, *The service's memory*), a little more allowed for.
 */
export const PARSE_BYTES_PER_DOCUMENT_BYTE = 32;

/** The memory the process may use: its control group's limit (a container's), else the machine's. */
export function memoryLimit(): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  const total = os.totalmem();
  return constrained > 0 && constrained < total ? constrained : total;
}

/**
 * TASK_THREADS by default: one thread fewer than the cores (the event loop keeps one), no more
 * than the threads whose worst documents (`maxDocumentBytes` each, parsed at once) fit in half
 * of the process's memory, and at least two. The peak of memory grows with the threads (each
 * parses one document at a time): with one per core, a machine of many cores and little memory
 * (16 cores, 8 GiB) could be driven out of memory by uploads of the largest documents. At least
 * two, because a copilot runs at most one task fewer than there are threads (fair-turns.ts): with
 * one thread another copilot's task waited for whatever task the first was running (on a 2-core
 * machine a small upload took 1.2 s during another copilot's flood instead of 75 ms: bench section 2).
 */
export function defaultTaskThreads(
  maxDocumentBytes: number,
  machine: { cores: number; memoryBytes: number } = { cores: os.availableParallelism(), memoryBytes: memoryLimit() },
): number {
  const byMemory = Math.floor(machine.memoryBytes / 2 / (PARSE_BYTES_PER_DOCUMENT_BYTE * maxDocumentBytes));
  return Math.max(2, Math.min(machine.cores - 1, byMemory));
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

// RFC 6750's b64token, at least 16 characters: a token that fits a Bearer header as it is.
const METRICS_TOKEN = /^[A-Za-z0-9\-._~+/]{16,256}=*$/;
// Names proxy-addr (Fastify's trustProxy) knows for address ranges.
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: `false` (the default: the peer is the client), `true` (trust every peer: only
 * when nothing but the proxy can reach the service), or a comma-separated list of addresses,
 * CIDRs and proxy-addr's names (loopback, linklocal, uniquelocal). No hop count: Fastify 5
 * trusts no peer on a count, since a client could forge the hops.
 */
function parseTrustProxy(raw: string | undefined, problems: string[]): boolean | string[] {
  if (raw === undefined || /^(false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^\d+$/.test(raw)) {
    problems.push(`TRUST_PROXY takes no hop count (got "${raw}"): name the proxy's addresses or networks, e.g. 10.0.0.5 or 10.0.0.0/8`);
    return false;
  }
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const bad = entries.filter((entry) => {
    if (PROXY_RANGE_NAMES.includes(entry.toLowerCase())) return false;
    const [address, prefix, ...rest] = entry.split('/');
    if (rest.length > 0 || !ipaddr.isValid(address!)) return true;
    if (prefix === undefined) return false;
    const max = ipaddr.parse(address!).kind() === 'ipv4' ? 32 : 128;
    return !/^\d{1,3}$/.test(prefix) || Number(prefix) > max;
  });
  if (bad.length > 0 || entries.length === 0) {
    problems.push(
      `TRUST_PROXY must be true, false, or a comma-separated list of addresses, CIDRs, loopback, linklocal or uniquelocal (bad: ${bad.map((b) => JSON.stringify(b)).join(', ') || 'empty'})`,
    );
  }
  return entries.map((e) => (PROXY_RANGE_NAMES.includes(e.toLowerCase()) ? e.toLowerCase() : e));
}

/**
 * What is wrong with a WEBHOOK_URL, or null. Refused at start rather than at every delivery:
 * a user name or password (the guarded fetcher accepts none, so each attempt would fail), or
 * anything but an absolute http(s) URL. The value is never echoed: its credentials, path or
 * query may be the hook's secret.
 */
function webhookUrlProblem(raw: string): string | null {
  const absolute = 'must be an absolute http:// or https:// URL, e.g. https://hooks.example.com/… (the value is not repeated here: it may hold a secret)';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return absolute;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !/^https?:\/\/[^/?#\s]/i.test(raw) || /\s/.test(raw)) return absolute;
  if (url.username !== '' || url.password !== '') {
    return 'must not contain a user name or password (user:password@…): no delivery is sent to such a URL; a receiver authenticates deliveries by their x-cms-signature header';
  }
  return null;
}

/**
 * Reads `.env` in the working directory (if any) under the real environment:
 * a variable set in the environment wins over the file.
 */
export function environmentWithDotenv(env: Env = process.env, cwd = process.cwd()): Env {
  const file = path.join(cwd, '.env');
  if (!existsSync(file)) return { ...env };
  const fromFile = dotenv.parse(readFileSync(file));
  return { ...fromFile, ...env };
}

/** The settings every fetch reads (`fetchPolicyOf`): all a CLI's URL input reads of the configuration. */
export type FetchSettings = Pick<Config, 'maxDocumentBytes' | 'fetchTimeoutMs' | 'fetchAllowNetworks' | 'fetchMinBytesPerSecond' | 'fetchMinRateWindowMs'>;

interface SettingsReader {
  /** What was wrong, one line each (the reader's own and its caller's). */
  problems: string[];
  /** The settings asked for so far. */
  names: Set<string>;
  get(key: string): string | undefined;
  int(key: string, fallback: number, min: number, max: number): number;
  bool(key: string, fallback: boolean): boolean;
}

/** Reads settings from `env`, a blank value as unset; a bad value is added to `problems` and its fallback used. */
function settingsReader(env: Env, problems: string[]): SettingsReader {
  const names = new Set<string>();
  const get = (key: string): string | undefined => {
    names.add(key);
    const value = env[key];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  return {
    problems,
    names,
    get,
    int(key, fallback, min, max) {
      const raw = get(key);
      if (raw === undefined) return fallback;
      if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
        problems.push(`${key} must be a whole number from ${min} to ${max} (got "${raw}")`);
        return fallback;
      }
      return Number(raw);
    },
    bool(key, fallback) {
      const raw = get(key);
      if (raw === undefined) return fallback;
      if (/^(true|1|yes|on)$/i.test(raw)) return true;
      if (/^(false|0|no|off)$/i.test(raw)) return false;
      problems.push(`${key} must be true or false (got "${raw}")`);
      return fallback;
    },
  };
}

/**
 * Variables that look like a misspelt setting (`DATABSE_URL`, `PROT`): one edit from a setting,
 * or two where the name is long or the letters are the same, swapped. Ignored, such a setting
 * started the service on defaults (an empty SQLite database instead of PostgreSQL); the
 * environment's other variables (`HOME`, `HOSTNAME`) are further from any.
 */
function misspeltSettings(env: Env, settings: ReadonlySet<string>): string[] {
  const sameLetters = (a: string, b: string) => [...a].sort().join('') === [...b].sort().join('');
  const problems: string[] = [];
  for (const name of Object.keys(env)) {
    if (settings.has(name) || env[name] === undefined) continue;
    const near = [...settings].find((setting) => {
      const distance = leven(name, setting);
      return distance === 1 || (distance === 2 && (Math.min(name.length, setting.length) >= 8 || sameLetters(name, setting)));
    });
    if (near !== undefined) problems.push(`${name} is not a setting of this service: did you mean ${near}? (set as it is, it would be ignored)`);
  }
  return problems;
}

const MiB = 1024 * 1024;

/** A host name: labels of letters, digits, hyphens (and the underscores of container names), at most 63 characters each, 253 in all. */
const HOST_NAME = /^(?=.{1,253}$)[a-z\d_](?:[a-z\d_-]{0,61}[a-z\d_])?(?:\.[a-z\d_](?:[a-z\d_-]{0,61}[a-z\d_])?)*\.?$/i;

/**
 * HOST: an IP address (IPv6 with or without the brackets of a URL) or a host name. Anything
 * else, which Node would hand to DNS as a name and fail on or resolve somewhere unexpected,
 * stops the start: a port (PORT sets it), a malformed address, a URL.
 */
function readHost(value: string | undefined, problems: string[]): string {
  if (value === undefined) return '127.0.0.1';
  const bracketed = /^\[(.*)\]$/.exec(value)?.[1];
  if (bracketed !== undefined && ipaddr.IPv6.isValid(bracketed)) return bracketed;
  if (bracketed === undefined && (ipaddr.IPv6.isValid(value) || ipaddr.IPv4.isValidFourPartDecimal(value))) return value;
  if (/^(?:\[[^\]]*\]|[^:[\]]+):\d+$/.test(value)) problems.push(`HOST takes an address or a host name with no port: PORT sets the port (got "${value}")`);
  else if (/^[\d.]+$/.test(value)) problems.push(`HOST is not an IPv4 address: four numbers 0–255 with dots between them (got "${value}")`);
  else if (bracketed !== undefined || /^[\da-f:.]*:[\da-f:.]*$/i.test(value)) problems.push(`HOST is not an IPv6 address (got "${value}")`);
  else if (!HOST_NAME.test(value)) problems.push(`HOST must be an IP address or a host name, e.g. 127.0.0.1, ::1, 0.0.0.0 or localhost (got "${value}")`);
  return value;
}

function readFetchSettings({ problems, get, int }: SettingsReader): FetchSettings {
  let fetchAllowNetworks: string[] = [];
  try {
    fetchAllowNetworks = parseAllowNetworks(get('FETCH_ALLOW_NETWORKS') ?? '');
  } catch (err) {
    problems.push(`FETCH_ALLOW_NETWORKS: ${(err as Error).message}`);
  }
  return {
    maxDocumentBytes: int('MAX_DOCUMENT_BYTES', 25 * MiB, 1024, 1024 * MiB),
    fetchTimeoutMs: int('FETCH_TIMEOUT_MS', 10_000, 100, 600_000),
    fetchAllowNetworks: Object.freeze(fetchAllowNetworks),
    fetchMinBytesPerSecond: int('FETCH_MIN_BYTES_PER_SECOND', 1024, 0, 1024 * MiB),
    fetchMinRateWindowMs: int('FETCH_MIN_RATE_WINDOW_MS', 5000, 100, 600_000),
  };
}

/**
 * The fetch settings alone, for the CLI's URL inputs: the rest of the environment (a
 * project's `.env` may set `DATABASE_URL` or `PORT` for other software) is not read.
 */
export function loadFetchSettings(env: Env = environmentWithDotenv()): FetchSettings {
  const problems: string[] = [];
  const settings = readFetchSettings(settingsReader(env, problems));
  if (problems.length > 0) throw new ConfigError(problems);
  return settings;
}

/** Builds the frozen Config; every bad key is reported at once in one ConfigError. */
export function loadConfig(env: Env = environmentWithDotenv()): Config {
  const problems: string[] = [];
  const read = settingsReader(env, problems);
  const { get, int, bool } = read;

  const databaseUrl = get('DATABASE_URL') ?? null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//i.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with postgres:// or postgresql:// (leave it unset for the embedded SQLite database)');
  } else if (databaseUrl !== null && !URL.canParse(databaseUrl)) {
    // The driver parses it as a URL too, and a malformed one would be "not reachable yet" until the timeout.
    problems.push(
      "DATABASE_URL is not a valid URL, e.g. postgres://user:password@host:5432/database (a port is at most 65535; a password's @ : / # ? % are percent-encoded; the value is not repeated here: it may hold a password)",
    );
  }

  const logFormat = (get('LOG_FORMAT') ?? 'auto').toLowerCase();
  if (!['auto', 'json', 'pretty'].includes(logFormat)) problems.push(`LOG_FORMAT must be auto, json or pretty (got "${logFormat}")`);
  const logLevel = (get('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`);
  }

  // Never echoed in a problem: the value is a credential.
  const adminApiKey = get('ADMIN_API_KEY') ?? null;
  if (adminApiKey !== null && !KEY_PATTERN.test(adminApiKey)) {
    problems.push(`ADMIN_API_KEY must be an API key as the service makes them: ${KEY_FORMAT_DESCRIPTION} (\`copilot-service keys generate\` prints one)`);
  }
  const metricsToken = get('METRICS_TOKEN') ?? null;
  if (metricsToken !== null && !METRICS_TOKEN.test(metricsToken)) {
    problems.push('METRICS_TOKEN must be 16 to 256 characters from A–Z a–z 0–9 - . _ ~ + / (then optional =)');
  }
  const trustProxy = parseTrustProxy(get('TRUST_PROXY'), problems);
  const webhookUrl = get('WEBHOOK_URL') ?? null;
  const webhookProblem = webhookUrl === null ? null : webhookUrlProblem(webhookUrl);
  if (webhookProblem !== null) problems.push(`WEBHOOK_URL ${webhookProblem}`);
  // Never echoed in a problem: the value is a credential.
  const webhookSecret = get('WEBHOOK_SECRET') ?? null;
  if (webhookUrl !== null && (webhookSecret === null || webhookSecret.length < 16)) {
    problems.push('WEBHOOK_SECRET must be set, at least 16 characters, when WEBHOOK_URL is (the deliveries are signed with it)');
  }

  const fetchSettings = readFetchSettings(read);
  const config: Config = {
    port: int('PORT', 8080, 0, 65535),
    host: readHost(get('HOST'), problems),
    dataDir: path.resolve(get('DATA_DIR') ?? './data'),
    databaseUrl,
    databaseConnectTimeoutMs: int('DATABASE_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    databaseLockTimeoutMs: int('DATABASE_LOCK_TIMEOUT_MS', LOCK_TIMEOUT_MS, 0, 3_600_000),
    databaseStartupTimeoutMs: int('DATABASE_STARTUP_TIMEOUT_MS', 60_000, 0, 3_600_000),
    searchTimeoutMs: int('SEARCH_TIMEOUT_MS', SCAN_TIME_LIMIT_MS, 1, 3_600_000),
    logLevel: logLevel as Config['logLevel'],
    allowAnonymousRead: bool('ALLOW_ANONYMOUS_READ', false),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1 * MiB, 1024, 1024 * MiB),
    requestBodiesMaxBytes: int('REQUEST_BODIES_MAX_BYTES', 256 * MiB, 1024, 64 * 1024 * MiB),
    maxConnectionsPerAddress: int('MAX_CONNECTIONS_PER_ADDRESS', 1024, 0, 1_000_000),
    ...fetchSettings,
    kbWorkers: int('KB_WORKERS', DEFAULT_KB_WORKERS, 0, 64),
    kbPollIntervalMs: int('KB_POLL_INTERVAL_MS', 1000, 10, 60_000),
    kbMaxPendingLinksPerBot: int('KB_MAX_PENDING_LINKS_PER_BOT', 2000, 1, 10_000_000),
    kbMaxPassagesPerLink: int('KB_MAX_PASSAGES_PER_LINK', 5000, 1, 10_000_000),
    kbMaxPassagesPerBot: int('KB_MAX_PASSAGES_PER_BOT', 100_000, 1, 1_000_000_000),
    validationCacheBytes: int('VALIDATION_CACHE_BYTES', 64 * MiB, 0, 16 * 1024 * MiB),
    taskThreads: int('TASK_THREADS', defaultTaskThreads(fetchSettings.maxDocumentBytes), 1, 64),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10_000, 1000, 600_000),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 300_000, 1000, 3_600_000),
    purgeDeletedAfterDays: int('PURGE_DELETED_AFTER_DAYS', 0, 0, 36_500),
    webhookDeliveriesKeptDays: int('WEBHOOK_DELIVERIES_KEPT_DAYS', 30, 0, 36_500),
    auditLogKeptDays: int('AUDIT_LOG_KEPT_DAYS', 0, 0, 36_500),
    syncIntervalMs: int('SYNC_INTERVAL_MS', 6 * 3_600_000, 1000, 30 * 86_400_000),
    apiDescriptionVersionsKept: int('API_DESCRIPTION_VERSIONS_KEPT', 50, 1, 100_000),
    webhookUrl,
    webhookSecret,
    logFormat: logFormat as Config['logFormat'],
    adminApiKey,
    metricsToken,
    trustProxy,
  };
  problems.push(...misspeltSettings(env, read.names));
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    ...config,
    trustProxy: Array.isArray(trustProxy) ? Object.freeze([...trustProxy]) : trustProxy,
  });
}
