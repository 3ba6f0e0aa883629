import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_KB_WORKERS, defaultTaskThreads, environmentWithDotenv, loadConfig, loadFetchSettings, memoryLimit } from '../src/config.js';
import { HOST_CONCURRENCY } from '../src/domain/knowledgebase/crawl.js';

// docs/configuration.md's table, as the code reads it.
describe("loadFetchSettings (the CLI's URL inputs)", () => {
  const fetchEnv = {
    MAX_DOCUMENT_BYTES: '2048',
    FETCH_TIMEOUT_MS: '1500',
    FETCH_ALLOW_NETWORKS: '10.0.0.0/8',
    FETCH_MIN_BYTES_PER_SECOND: '7',
    FETCH_MIN_RATE_WINDOW_MS: '900',
  };

  it('reads the fetch settings as loadConfig reads them', () => {
    const config = loadConfig(fetchEnv);
    expect(loadFetchSettings(fetchEnv)).toEqual({
      maxDocumentBytes: config.maxDocumentBytes,
      fetchTimeoutMs: config.fetchTimeoutMs,
      fetchAllowNetworks: config.fetchAllowNetworks,
      fetchMinBytesPerSecond: config.fetchMinBytesPerSecond,
      fetchMinRateWindowMs: config.fetchMinRateWindowMs,
    });
    expect(loadFetchSettings(fetchEnv)).toMatchObject({ maxDocumentBytes: 2048, fetchTimeoutMs: 1500, fetchAllowNetworks: ['10.0.0.0/8'] });
  });

  it('reads nothing else: a setting the server would refuse does not fail it, a bad fetch setting does', () => {
    expect(() => loadConfig({ ...fetchEnv, DATABASE_URL: 'mysql://x', PORT: 'http' })).toThrow(ConfigError);
    expect(loadFetchSettings({ ...fetchEnv, DATABASE_URL: 'mysql://x', PORT: 'http' }).fetchTimeoutMs).toBe(1500);
    expect(() => loadFetchSettings({ FETCH_TIMEOUT_MS: 'soon', FETCH_ALLOW_NETWORKS: 'nowhere' })).toThrow(
      expect.objectContaining({ problems: [expect.stringMatching(/^FETCH_ALLOW_NETWORKS: /), expect.stringMatching(/^FETCH_TIMEOUT_MS must be/)] }),
    );
  });
});

describe('configuration', () => {
  it('documents every variable the code reads, and only those', () => {
    const code = readFileSync(new URL('../src/config.ts', import.meta.url), 'utf8');
    const read = new Set([...code.matchAll(/\b(?:get|int|bool)\('([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1]!));
    const doc = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    const documented = new Set([...doc.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!));
    expect([...read].sort()).toEqual([...documented].sort());
  });

  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: path.resolve('./data'),
      databaseUrl: null,
      logLevel: 'info',
      allowAnonymousRead: false,
      bodyLimitBytes: 1048576,
      maxDocumentBytes: 26214400,
      fetchTimeoutMs: 10000,
      fetchAllowNetworks: [],
      kbWorkers: 4,
      kbPollIntervalMs: 1000,
      validationCacheBytes: 67108864,
      taskThreads: defaultTaskThreads(26214400),
      shutdownTimeoutMs: 10000,
      requestTimeoutMs: 300000,
      purgeDeletedAfterDays: 0,
      databaseLockTimeoutMs: 30_000,
      webhookDeliveriesKeptDays: 30,
      auditLogKeptDays: 0,
      syncIntervalMs: 21_600_000,
      apiDescriptionVersionsKept: 50,
      webhookUrl: null,
      webhookSecret: null,
      adminApiKey: null,
      metricsToken: null,
      trustProxy: false,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('runs one task thread fewer than the cores, no more than the largest documents fit in half the memory, at least two', () => {
    const GiB = 1024 ** 3;
    const MiB = 1024 ** 2;
    // 32 × 25 MiB = 800 MiB a thread at worst.
    expect(defaultTaskThreads(25 * MiB, { cores: 16, memoryBytes: 64 * GiB })).toBe(15);
    expect(defaultTaskThreads(25 * MiB, { cores: 16, memoryBytes: 8 * GiB })).toBe(5);
    expect(defaultTaskThreads(5 * MiB, { cores: 16, memoryBytes: 8 * GiB })).toBe(15);
    expect(defaultTaskThreads(25 * MiB, { cores: 2, memoryBytes: 1 * GiB })).toBe(2);
    expect(defaultTaskThreads(25 * MiB, { cores: 1, memoryBytes: 64 * GiB })).toBe(2);
    // The service's own: this machine's cores and memory, its MAX_DOCUMENT_BYTES.
    expect(loadConfig({ MAX_DOCUMENT_BYTES: String(5 * MiB) }).taskThreads).toBe(
      defaultTaskThreads(5 * MiB, { cores: availableParallelism(), memoryBytes: memoryLimit() }),
    );
    expect(memoryLimit()).toBeLessThanOrEqual(totalmem());
  });

  it('runs as many knowledge-base jobs at once as one crawl may have pages in flight', () => {
    expect(loadConfig({}).kbWorkers).toBe(DEFAULT_KB_WORKERS);
    expect(DEFAULT_KB_WORKERS).toBe(HOST_CONCURRENCY);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      DATA_DIR: '/tmp/somewhere',
      DATABASE_URL: 'postgres://u@h/db',
      LOG_LEVEL: 'WARN',
      ALLOW_ANONYMOUS_READ: 'yes',
      BODY_LIMIT_BYTES: '2048',
      MAX_DOCUMENT_BYTES: '4096',
      FETCH_TIMEOUT_MS: '500',
      FETCH_ALLOW_NETWORKS: '10.0.0.0/8, ::1/128',
      KB_WORKERS: '0',
      KB_POLL_INTERVAL_MS: '50',
      VALIDATION_CACHE_BYTES: '0',
      TASK_THREADS: '3',
      SHUTDOWN_TIMEOUT_MS: '1000',
      REQUEST_TIMEOUT_MS: '2000',
      PURGE_DELETED_AFTER_DAYS: '30',
      WEBHOOK_DELIVERIES_KEPT_DAYS: '7',
      DATABASE_LOCK_TIMEOUT_MS: '0',
      AUDIT_LOG_KEPT_DAYS: '365',
    });
    expect(config).toMatchObject({
      port: 9000,
      host: '127.0.0.1',
      dataDir: '/tmp/somewhere',
      databaseUrl: 'postgres://u@h/db',
      logLevel: 'warn',
      allowAnonymousRead: true,
      bodyLimitBytes: 2048,
      maxDocumentBytes: 4096,
      fetchTimeoutMs: 500,
      kbWorkers: 0,
      kbPollIntervalMs: 50,
      validationCacheBytes: 0,
      taskThreads: 3,
      shutdownTimeoutMs: 1000,
      requestTimeoutMs: 2000,
      purgeDeletedAfterDays: 30,
      webhookDeliveriesKeptDays: 7,
      databaseLockTimeoutMs: 0,
      auditLogKeptDays: 365,
    });
    expect(config.fetchAllowNetworks).toHaveLength(2);
  });

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        ALLOW_ANONYMOUS_READ: 'maybe',
        DATABASE_URL: 'mysql://x',
        LOG_LEVEL: 'loud',
        KB_WORKERS: '-1',
        TASK_THREADS: '0',
        REQUEST_TIMEOUT_MS: '10',
        PURGE_DELETED_AFTER_DAYS: 'soon',
        WEBHOOK_DELIVERIES_KEPT_DAYS: '-1',
        DATABASE_LOCK_TIMEOUT_MS: 'long',
        AUDIT_LOG_KEPT_DAYS: 'forever',
        // A drain of less than a second ends every SIGTERM "too long", exit 1 (operator sweep).
        SHUTDOWN_TIMEOUT_MS: '0',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const key of [
      'PORT',
      'ALLOW_ANONYMOUS_READ',
      'DATABASE_URL',
      'LOG_LEVEL',
      'KB_WORKERS',
      'TASK_THREADS',
      'REQUEST_TIMEOUT_MS',
      'PURGE_DELETED_AFTER_DAYS',
      'WEBHOOK_DELIVERIES_KEPT_DAYS',
      'AUDIT_LOG_KEPT_DAYS',
      'DATABASE_LOCK_TIMEOUT_MS',
      'SHUTDOWN_TIMEOUT_MS',
    ])
      expect(problems).toContain(key);
  });

  it('refuses a misspelt setting, naming the one it is close to, rather than ignoring it (operator sweep: DATABSE_URL served an empty SQLite database); leaves other variables alone', () => {
    let error: unknown;
    try {
      loadConfig({ DATABSE_URL: 'postgres://u@h/db', PROT: '9090', LOG_LEVLE: 'debug', KB_WORKER: '2' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^DATABSE_URL is not a setting of this service: did you mean DATABASE_URL\?/),
        expect.stringMatching(/^PROT .*did you mean PORT\?/),
        expect.stringMatching(/^LOG_LEVLE .*did you mean LOG_LEVEL\?/),
        expect.stringMatching(/^KB_WORKER .*did you mean KB_WORKERS\?/),
      ]),
    );
    expect(problems.join('\n')).not.toContain('postgres://');
    // Names of other software are left alone, however short.
    expect(() =>
      loadConfig({ HOME: '/root', HOSTNAME: 'x', PATH: '/bin', PWD: '/', NODE_ENV: 'production', LANG: 'C', TERM: 'xterm', USER: 'u', POSTGRES_PORT: '5432' }),
    ).not.toThrow();
  });

  it('refuses a DATABASE_URL that is not a URL (it was retried as "not reachable yet" until the start-up timeout), never repeating it', () => {
    for (const url of ['postgres://[::1', 'postgres://u:pw-secret@127.0.0.1:99999/x', 'postgresql://u:pw-secret@ho st/db']) {
      let error: unknown;
      try {
        loadConfig({ DATABASE_URL: url });
      } catch (err) {
        error = err;
      }
      expect(error, url).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems.join('\n');
      expect(problems).toMatch(/^DATABASE_URL is not a valid URL/);
      expect(problems).not.toContain('pw-secret');
    }
    // A socket directory or options in the query are URLs too.
    expect(loadConfig({ DATABASE_URL: 'postgres:///copilots?host=/var/run/postgresql' }).databaseUrl).toBe('postgres:///copilots?host=/var/run/postgresql');
  });

  // Issue 13 §3, §10: the knowledge-base queue's bounds and the fetcher's minimum rate.
  it('has the documented ingestion limits, reads them, and refuses bad values', () => {
    expect(loadConfig({})).toMatchObject({
      fetchMinBytesPerSecond: 1024,
      fetchMinRateWindowMs: 5000,
      kbMaxPendingLinksPerBot: 2000,
      kbMaxPassagesPerLink: 5000,
      kbMaxPassagesPerBot: 100000,
    });
    expect(
      loadConfig({
        FETCH_MIN_BYTES_PER_SECOND: '0',
        FETCH_MIN_RATE_WINDOW_MS: '250',
        KB_MAX_PENDING_LINKS_PER_BOT: '10',
        KB_MAX_PASSAGES_PER_LINK: '20',
        KB_MAX_PASSAGES_PER_BOT: '30',
      }),
    ).toMatchObject({ fetchMinBytesPerSecond: 0, fetchMinRateWindowMs: 250, kbMaxPendingLinksPerBot: 10, kbMaxPassagesPerLink: 20, kbMaxPassagesPerBot: 30 });
    const keys = [
      'FETCH_MIN_BYTES_PER_SECOND',
      'FETCH_MIN_RATE_WINDOW_MS',
      'KB_MAX_PENDING_LINKS_PER_BOT',
      'KB_MAX_PASSAGES_PER_LINK',
      'KB_MAX_PASSAGES_PER_BOT',
    ];
    let error: unknown;
    try {
      loadConfig({
        FETCH_MIN_BYTES_PER_SECOND: '-5',
        FETCH_MIN_RATE_WINDOW_MS: '0',
        KB_MAX_PENDING_LINKS_PER_BOT: '0',
        KB_MAX_PASSAGES_PER_LINK: 'many',
        KB_MAX_PASSAGES_PER_BOT: '0',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const key of keys) expect(problems).toContain(key);
  });

  // Issue 17 §1: what listens where, the seeded admin key, the metrics token, the proxies trusted.
  describe('HOST, ADMIN_API_KEY, METRICS_TOKEN and TRUST_PROXY', () => {
    const problemsOf = (env: Record<string, string>): string => {
      try {
        loadConfig(env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems.join('\n');
      }
      return '';
    };
    const KEY = `cms_${'A1b2C3d4E5f6G7h8'}_${'x'.repeat(16)}${'Y9'.repeat(8)}`;

    it('listens on loopback unless HOST says otherwise', () => {
      expect(loadConfig({}).host).toBe('127.0.0.1');
      expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
      expect(loadConfig({ HOST: '::' }).host).toBe('::');
      expect(loadConfig({ HOST: 'localhost' }).host).toBe('localhost');
      expect(loadConfig({ HOST: 'api-1.internal' }).host).toBe('api-1.internal');
      expect(loadConfig({ HOST: 'copilot_service' }).host).toBe('copilot_service');
    });

    it('HOST takes an IPv6 address with or without brackets; a port, a malformed address or name stops the start (operator sweep: Node asked DNS for them)', () => {
      expect(loadConfig({ HOST: '[::1]' }).host).toBe('::1');
      expect(loadConfig({ HOST: '[::]' }).host).toBe('::');
      const cases: Array<[string, RegExp]> = [
        ['127.0.0.1:8080', /HOST.*no port.*PORT/],
        ['[::1]:8080', /HOST.*no port.*PORT/],
        ['999.1.1.1', /HOST.*not an IPv4 address/],
        ['1.2.3', /HOST.*not an IPv4 address/],
        ['::1::', /HOST.*not an IPv6 address/],
        ['[127.0.0.1]', /HOST.*not an IPv6 address/],
        ['http://0.0.0.0', /HOST.*address or a host name/],
        ['bad_name!', /HOST.*address or a host name/],
        [`${'a'.repeat(64)}.example`, /HOST.*address or a host name/],
      ];
      for (const [bad, message] of cases) expect(problemsOf({ HOST: bad }), bad).toMatch(message);
    });

    it('ADMIN_API_KEY must be a key in the format the service makes, and a bad one is never echoed', () => {
      expect(loadConfig({ ADMIN_API_KEY: KEY }).adminApiKey).toBe(KEY);
      expect(loadConfig({ ADMIN_API_KEY: '  ' }).adminApiKey).toBeNull();
      for (const bad of ['secret-admin-password', `${KEY}x`, KEY.replace('cms_', 'cmx_'), KEY.replace('x', '-'), KEY.slice(0, -1)]) {
        const problems = problemsOf({ ADMIN_API_KEY: bad });
        expect(problems, bad).toContain('ADMIN_API_KEY');
        expect(problems).not.toContain(bad);
      }
    });

    it('METRICS_TOKEN is a bearer token of 16 characters or more', () => {
      expect(loadConfig({ METRICS_TOKEN: 'abcdefghij-._~+/0123==' }).metricsToken).toBe('abcdefghij-._~+/0123==');
      for (const bad of ['short', 'has a space in it here', 'quote"quote"quote"', 'x'.repeat(257)])
        expect(problemsOf({ METRICS_TOKEN: bad }), bad).toContain('METRICS_TOKEN');
    });

    it('TRUST_PROXY takes false (default), true, or addresses, CIDRs and names; no hop count', () => {
      expect(loadConfig({}).trustProxy).toBe(false);
      expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
      expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
      expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7 ,fd00::/8,::1,Loopback' }).trustProxy).toEqual([
        '10.0.0.0/8',
        '192.168.1.7',
        'fd00::/8',
        '::1',
        'loopback',
      ]);
      expect(Object.isFrozen(loadConfig({ TRUST_PROXY: '10.0.0.1' }).trustProxy)).toBe(true);
      for (const bad of ['maybe', '0', '2', '10.0.0.0/33', '10.0.0.0/8,proxy.example', '::1/129', '1.2.3.4/8/8', ','])
        expect(problemsOf({ TRUST_PROXY: bad }), bad).toContain('TRUST_PROXY');
    });
  });

  it('reads .env under the real environment (the environment wins)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cms-env-'));
    try {
      writeFileSync(path.join(dir, '.env'), 'PORT=7000\nKB_WORKERS=5\n');
      const config = loadConfig(environmentWithDotenv({ PORT: '7100' }, dir));
      expect(config.port).toBe(7100);
      expect(config.kbWorkers).toBe(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
