import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FetchError, type FetchErrorKind, type FetchPolicy, type GuardedFetchHooks, type ResolvedAddress, fetchGuarded } from '../../src/net/guarded-fetch.js';
import { builtModule, runNodeScript } from '../support/built-sources.js';
import { type LocalServer, canListenOnIpv6Loopback, startServer } from './local-server.js';

const LOCAL: FetchPolicy = {
  timeoutMs: 3000,
  maxBytes: 1024 * 1024,
  maxRedirects: 5,
  allowNetworks: ['127.0.0.0/8', '::1/128'],
};
const STRICT: FetchPolicy = { ...LOCAL, allowNetworks: [] };
const NAME_REFUSED = (name: string): string => `The host name ${name} resolves to an address that is not public; only public addresses can be fetched.`;

/** Events the server side saw for the streaming routes, to prove the client hung up early. */
const streamLog = { bytesWritten: 0, closed: false, closedAt: 0 };
const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });

function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const path = url.pathname;
  if (path === '/ok') {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('hello');
  } else if (path === '/versioned') {
    // A document with validators: 304 when the client's match.
    const validators = { etag: '"v7"', 'last-modified': 'Tue, 24 Nov 2026 08:00:00 GMT' };
    if (req.headers['if-none-match'] === '"v7"' || req.headers['if-modified-since'] === validators['last-modified']) {
      res.writeHead(304, validators).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', ...validators });
    res.end('{"v":7}');
  } else if (path === '/pieces') {
    // A body sent in many writes, with its length declared or not (chunked).
    const body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 251));
    res.writeHead(200, { 'content-type': 'application/octet-stream', ...(url.searchParams.has('declared') && { 'content-length': String(body.length) }) });
    const write = (at: number): void => {
      if (at >= body.length) {
        res.end();
        return;
      }
      res.write(body.subarray(at, at + 7_000));
      setImmediate(() => write(at + 7_000));
    };
    write(0);
  } else if (path === '/echo') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ua: req.headers['user-agent'], accept: req.headers.accept, host: req.headers.host }));
  } else if (path.startsWith('/chain/')) {
    const n = Number(path.slice('/chain/'.length));
    if (n === 0) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('end of chain');
    } else {
      res.writeHead(n % 2 === 0 ? 302 : 301, { location: `/chain/${n - 1}` });
      res.end();
    }
  } else if (path.startsWith('/slow-chain/')) {
    const n = Number(path.slice('/slow-chain/'.length));
    setTimeout(() => {
      res.writeHead(307, { location: `/slow-chain/${n + 1}` });
      res.end();
    }, 120);
  } else if (path === '/to') {
    res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('loc') ?? '' });
    res.end('redirect body');
  } else if (path === '/relative/a/b') {
    res.writeHead(303, { location: '../ok-rel?x=1' });
    res.end();
  } else if (path === '/relative/ok-rel') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`relative ${url.search}`);
  } else if (path === '/no-location') {
    res.writeHead(302);
    res.end();
  } else if (path === '/stall') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('partial');
    // never ends: the client's deadline must fire
  } else if (path === '/declared-big') {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(50 * 1024 * 1024) });
    res.write(Buffer.alloc(1024));
    res.on('close', () => {
      streamLog.closed = true;
      streamLog.closedAt = Date.now();
    });
  } else if (path === '/endless') {
    streamLog.bytesWritten = 0;
    streamLog.closed = false;
    res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    const pump = (): void => {
      while (!res.destroyed && streamLog.bytesWritten < 512 * 1024 * 1024) {
        streamLog.bytesWritten += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
    };
    res.on('close', () => {
      streamLog.closed = true;
      streamLog.closedAt = Date.now();
    });
    pump();
  } else if (path === '/exact') {
    const size = Number(url.searchParams.get('size'));
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(Buffer.alloc(size, 0x62));
  } else if (path === '/gzip') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    res.end(gzipSync('compressed hello'));
  } else if (path === '/bomb') {
    res.writeHead(200, {
      'content-type': 'text/plain',
      'content-encoding': 'gzip',
      'content-length': String(bomb.length),
    });
    res.end(bomb);
  } else if (path === '/missing') {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not here');
  } else {
    res.writeHead(500);
    res.end();
  }
}

let v4: LocalServer;
let v6: LocalServer | null = null;

beforeAll(async () => {
  v4 = await startServer('127.0.0.1', handler);
  if (await canListenOnIpv6Loopback()) v6 = await startServer('::1', handler);
});

afterAll(async () => {
  await v4?.close();
  await v6?.close();
});

/** The rejection of `promise` as a FetchError (fails the test when it resolves or throws something else). */
async function fetchError(promise: Promise<unknown>): Promise<FetchError> {
  const outcome = await promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  if (outcome.ok) throw new Error(`expected a FetchError, got a response: ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(FetchError);
  return outcome.error as FetchError;
}

/** Hooks that record every resolution and every socket connected. */
function recorder(resolve?: (hostname: string) => Promise<ResolvedAddress[]>) {
  const seen = { resolved: [] as string[], connected: [] as string[] };
  const hooks: GuardedFetchHooks = {
    onConnected: (address) => seen.connected.push(address),
  };
  if (resolve) {
    hooks.resolve = async (hostname) => {
      seen.resolved.push(hostname);
      return resolve(hostname);
    };
  }
  return { seen, hooks };
}

describe('fetchGuarded: success', () => {
  it('returns status, content type, body and final URL', async () => {
    const result = await fetchGuarded(`${v4.origin}/ok`, LOCAL);
    expect(result).toEqual({
      url: `${v4.origin}/ok`,
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: Buffer.from('hello'),
      etag: null,
      lastModified: null,
    });
  });

  it('a conditional request: the validators come back, a match is a 304 with no body', async () => {
    const url = `${v4.origin}/versioned`;
    const first = await fetchGuarded(url, LOCAL, { conditional: { etag: null, lastModified: null } });
    expect(first).toMatchObject({ status: 200, etag: '"v7"', lastModified: 'Tue, 24 Nov 2026 08:00:00 GMT', body: Buffer.from('{"v":7}') });
    const byEtag = await fetchGuarded(url, LOCAL, { conditional: { etag: '"v7"', lastModified: null } });
    expect(byEtag).toMatchObject({ status: 304, etag: '"v7"', body: Buffer.alloc(0) });
    const byDate = await fetchGuarded(url, LOCAL, { conditional: { etag: null, lastModified: first.lastModified } });
    expect(byDate.status).toBe(304);
    const changed = await fetchGuarded(url, LOCAL, { conditional: { etag: '"v6"', lastModified: null } });
    expect(changed.status).toBe(200);
  });

  it('sends the User-Agent, the default Accept and the original Host', async () => {
    const result = await fetchGuarded(`http://localhost:${v4.port}/echo`, LOCAL);
    expect(JSON.parse(result.body.toString())).toEqual({
      ua: 'copilot-management-service/0.1',
      accept: '*/*',
      host: `localhost:${v4.port}`,
    });
  });

  it('sends the Accept given by the caller', async () => {
    const result = await fetchGuarded(`${v4.origin}/echo`, LOCAL, { accept: 'application/json, application/yaml' });
    expect(JSON.parse(result.body.toString()).accept).toBe('application/json, application/yaml');
  });

  it('reaches an allowed IPv6 loopback server', async (ctx) => {
    if (v6 === null) ctx.skip();
    const result = await fetchGuarded(`${v6!.origin}/ok`, { ...LOCAL, allowNetworks: ['::1/128'] });
    expect(result.body.toString()).toBe('hello');
  });

  it('reaches allowed addresses however the IPv4 literal is spelled', async () => {
    for (const host of ['127.0.0.1', '2130706433', '0177.0.0.1', '0x7f.1', '127.1']) {
      const result = await fetchGuarded(`http://${host}:${v4.port}/ok`, { ...LOCAL, allowNetworks: ['127.0.0.0/8'] });
      expect(result.url).toBe(`http://127.0.0.1:${v4.port}/ok`);
    }
  });

  it('judges an IPv4-mapped IPv6 literal by its IPv4 address', async () => {
    const { seen, hooks } = recorder();
    const result = await fetchGuarded(`http://[::ffff:127.0.0.1]:${v4.port}/ok`, { ...LOCAL, allowNetworks: ['127.0.0.0/8'] }, {}, hooks);
    expect(result.body.toString()).toBe('hello');
    // An IPv6 socket to an IPv4-mapped address reaches the IPv4 host.
    expect(seen.connected).toEqual(['::ffff:127.0.0.1']);
  });

  it('decodes gzip', async () => {
    const result = await fetchGuarded(`${v4.origin}/gzip`, LOCAL);
    expect(result.body.toString()).toBe('compressed hello');
  });

  it('reads a body sent in many pieces whole, in a buffer of its own (one that can move to a task thread), its length declared or not', async () => {
    const expected = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 251));
    for (const query of ['?declared', '']) {
      const { body } = await fetchGuarded(`${v4.origin}/pieces${query}`, LOCAL);
      expect(body.equals(expected), query).toBe(true);
      expect(body.byteOffset === 0 && body.byteLength === body.buffer.byteLength, query).toBe(true);
    }
  });

  it('accepts a body of exactly maxBytes', async () => {
    const result = await fetchGuarded(`${v4.origin}/exact?size=4096`, { ...LOCAL, maxBytes: 4096 });
    expect(result.body.length).toBe(4096);
  });
});

describe('fetchGuarded: connections kept between calls', () => {
  // A connection goes back to its pool a turn of the event loop after its answer is read.
  const settled = () => new Promise((resolve) => setImmediate(resolve));

  it('fetches the next page of a site over the connection of the one before', async () => {
    const site = await startServer('127.0.0.1', handler);
    try {
      const policy = { ...LOCAL, allowNetworks: ['127.0.0.1/32'] };
      for (let i = 0; i < 10; i++) {
        expect((await fetchGuarded(`${site.origin}/ok`, policy)).body.toString()).toBe('hello');
        await settled();
      }
      expect(site.connections).toBe(1);
    } finally {
      await site.close();
    }
  });

  it('a kept connection the server closed as the request went out: sent once more, on a new connection', async () => {
    // The server answers each connection's first request and drops the connection on its second,
    // as a server whose idle timeout ends the moment the request arrives.
    const served = new WeakMap<object, number>();
    const site = await startServer('127.0.0.1', (req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      if (n > 1) req.socket.destroy();
      else res.end('hello');
    });
    try {
      const policy = { ...LOCAL, allowNetworks: ['127.0.0.1/32'] };
      expect((await fetchGuarded(`${site.origin}/a`, policy)).body.toString()).toBe('hello');
      await settled();
      expect((await fetchGuarded(`${site.origin}/b`, policy)).body.toString()).toBe('hello');
      expect(site.connections).toBe(2);
    } finally {
      await site.close();
    }
  });

  it('a new connection the server closes before answering is not sent again: the failure is the answer', async () => {
    // Only a kept connection may have been closed by an idle timeout as the request went out; a
    // server that drops every new connection is asked once per call, not twice.
    const site = await startServer('127.0.0.1', (req) => req.socket.destroy());
    try {
      const policy = { ...LOCAL, allowNetworks: ['127.0.0.1/32'] };
      const error = await fetchError(fetchGuarded(`${site.origin}/a`, policy));
      expect(error.kind).toBe('network');
      expect(error.message).toBe(`The connection to ${new URL(site.origin).host} was closed unexpectedly.`);
      expect(site.connections).toBe(1);
    } finally {
      await site.close();
    }
  });

  it('never reuses a connection a call gave up on mid-answer', async () => {
    const site = await startServer('127.0.0.1', handler);
    try {
      const policy = { ...LOCAL, allowNetworks: ['127.0.0.1/32'], maxBytes: 4096 };
      await fetchGuarded(`${site.origin}/ok`, policy);
      await settled();
      // The same connection, cut off mid-body (50 MiB declared, 1 KiB sent): the next call opens another.
      expect((await fetchError(fetchGuarded(`${site.origin}/declared-big`, policy))).kind).toBe('too_large');
      await settled();
      expect(site.connections).toBe(1);
      expect((await fetchGuarded(`${site.origin}/ok`, policy)).body.toString()).toBe('hello');
      expect(site.connections).toBeGreaterThan(1);
    } finally {
      await site.close();
    }
  });
});

describe('fetchGuarded: URLs that are not http(s)', () => {
  const cases: Array<[string, string]> = [
    ['not a url', 'The URL is not a valid absolute URL.'],
    ['/relative/path', 'The URL is not a valid absolute URL.'],
    ['file:///etc/passwd', 'The URL uses file:; only http: and https: URLs can be fetched.'],
    ['ftp://example.com/spec.yaml', 'The URL uses ftp:; only http: and https: URLs can be fetched.'],
    ['gopher://example.com/', 'The URL uses gopher:; only http: and https: URLs can be fetched.'],
    ['data:text/plain,hi', 'The URL uses data:; only http: and https: URLs can be fetched.'],
    ['javascript:alert(1)', 'The URL uses javascript:; only http: and https: URLs can be fetched.'],
    ['http://user:secret@example.com/', 'The URL contains a user name or password, which is not accepted.'],
    ['https://token@example.com/', 'The URL contains a user name or password, which is not accepted.'],
  ];
  it.each(cases)('%s → bad_url', async (url, message) => {
    const { seen, hooks } = recorder(async () => [{ address: '8.8.8.8', family: 4 }]);
    const error = await fetchError(fetchGuarded(url, STRICT, {}, hooks));
    expect(error.kind).toBe('bad_url');
    expect(error.message).toBe(message);
    expect(error.url).not.toContain('secret');
    expect(seen).toEqual({ resolved: [], connected: [] });
  });
});

describe('fetchGuarded: refused addresses, before any connection', () => {
  const literalCases = (): Array<[string, string]> => [
    [`http://127.0.0.1:${v4.port}/ok`, '127.0.0.1'],
    [`http://2130706433:${v4.port}/ok`, '127.0.0.1'],
    [`http://0177.0.0.1:${v4.port}/ok`, '127.0.0.1'],
    [`http://0x7f.1:${v4.port}/ok`, '127.0.0.1'],
    [`http://0x7f000001:${v4.port}/ok`, '127.0.0.1'],
    [`http://127.1:${v4.port}/ok`, '127.0.0.1'],
    [`http://[::ffff:127.0.0.1]:${v4.port}/ok`, '::ffff:7f00:1'],
    [`http://0.0.0.0:${v4.port}/ok`, '0.0.0.0'],
    [`http://0:${v4.port}/ok`, '0.0.0.0'],
    [`http://[::1]:${v6?.port ?? v4.port}/ok`, '::1'],
    [`http://[::]:${v4.port}/ok`, '::'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ['http://100.100.100.200/latest/meta-data/', '100.100.100.200'],
    ['http://168.63.129.16/machine?comp=goalstate', '168.63.129.16'],
    ['http://[::ffff:168.63.129.16]/', '::ffff:a83f:8110'],
    ['http://10.1.2.3/', '10.1.2.3'],
    ['http://172.16.5.4/', '172.16.5.4'],
    ['http://192.168.1.1/', '192.168.1.1'],
    ['http://[fd00:ec2::254]/', 'fd00:ec2::254'],
    ['http://[fe80::1]/', 'fe80::1'],
    ['http://[64:ff9b::7f00:1]/', '64:ff9b::7f00:1'],
    ['http://[2002:7f00:1::]/', '2002:7f00:1::'],
    ['http://224.0.0.1/', '224.0.0.1'],
    ['http://255.255.255.255/', '255.255.255.255'],
  ];

  it('refuses every non-global IP literal without resolving or connecting', async () => {
    const before = v4.connections + (v6?.connections ?? 0);
    for (const [url, address] of literalCases()) {
      const { seen, hooks } = recorder(async () => [{ address: '8.8.8.8', family: 4 }]);
      const error = await fetchError(fetchGuarded(url, STRICT, {}, hooks));
      expect(error.kind, url).toBe('refused');
      expect(error.message, url).toMatch(new RegExp(`^The address ${address.replace(/[.]/g, '\\.')} is not allowed( \\(.+\\))?\\.$`));
      expect(seen, url).toEqual({ resolved: [], connected: [] });
    }
    expect(v4.connections + (v6?.connections ?? 0)).toBe(before);
  });

  it('names the address and its range when the URL itself spells it', async () => {
    const error = await fetchError(fetchGuarded('http://10.20.30.40/', STRICT));
    expect(error.message).toBe('The address 10.20.30.40 is not allowed (private network).');
    const wireserver = await fetchError(fetchGuarded('http://168.63.129.16/', STRICT));
    expect(wireserver.message).toBe('The address 168.63.129.16 is not allowed (cloud metadata service).');
  });

  it('refuses localhost (real DNS) without connecting, and without saying where it points', async () => {
    const before = v4.connections + (v6?.connections ?? 0);
    const { seen, hooks } = recorder();
    const error = await fetchError(fetchGuarded(`http://localhost:${v4.port}/ok`, STRICT, {}, hooks));
    expect(error.kind).toBe('refused');
    expect(error.message).toBe(NAME_REFUSED('localhost'));
    expect(seen.connected).toEqual([]);
    expect(v4.connections + (v6?.connections ?? 0)).toBe(before);
  });

  // A writer key must not learn internal DNS from a refusal: a name's answer names neither
  // the address nor its range (issue 13 §6).
  it.each([
    ['db.corp.example.test', '10.20.30.40'],
    ['metadata.example.test', '169.254.169.254'],
    ['wireserver.example.test', '168.63.129.16'],
    ['loop.example.test', '::1'],
    ['mapped.example.test', '::ffff:192.168.7.7'],
  ])('refuses %s (resolving to %s) without naming the address', async (name, address) => {
    const { seen, hooks } = recorder(async () => [{ address, family: address.includes(':') ? 6 : 4 }]);
    const error = await fetchError(fetchGuarded(`http://${name}/spec.json`, STRICT, {}, hooks));
    expect(error).toMatchObject({ kind: 'refused', url: `http://${name}/spec.json` });
    expect(error.message).toBe(NAME_REFUSED(name));
    expect(error.message).not.toContain(address);
    expect(error.message.replace(name, '')).not.toMatch(/private|loopback|link-local|metadata|mapped/);
    expect(seen).toEqual({ resolved: [name], connected: [] });
  });

  it('refuses a name when any one of its addresses is refused', async () => {
    const { seen, hooks } = recorder(async () => [
      { address: '127.0.0.1', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]);
    const error = await fetchError(fetchGuarded(`http://mixed.example.test:${v4.port}/ok`, { ...LOCAL, allowNetworks: ['127.0.0.1/32'] }, {}, hooks));
    expect(error.kind).toBe('refused');
    expect(error.message).toBe(NAME_REFUSED('mixed.example.test'));
    expect(seen.connected).toEqual([]);
  });

  it('refuses localhost (real DNS) on the connections kept between calls too', async () => {
    // No test hooks: the policy's shared agent, whose socket lookup checks the address.
    const before = v4.connections + (v6?.connections ?? 0);
    const url = `http://localhost:${v4.port}/ok`;
    const error = await fetchError(fetchGuarded(url, { ...STRICT }));
    expect(error).toMatchObject({ kind: 'refused', url, message: NAME_REFUSED('localhost') });
    expect(v4.connections + (v6?.connections ?? 0)).toBe(before);
  });

  it('refuses a port the fetch standard blocks', async () => {
    const error = await fetchError(fetchGuarded('http://127.0.0.1:25/', LOCAL));
    expect(error).toMatchObject({ kind: 'refused', message: 'Port 25 is not allowed for fetching.' });
  });
});

describe('fetchGuarded: DNS rebinding', () => {
  it('resolves once and connects to exactly the address it checked, keeping the Host name', async () => {
    let calls = 0;
    const { seen, hooks } = recorder(async () => {
      calls++;
      // The first answer is allowed; any later answer (a rebinding attack) is not.
      return calls === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }];
    });
    const result = await fetchGuarded(`http://rebind.example.test:${v4.port}/echo`, { ...LOCAL, allowNetworks: ['127.0.0.1/32'] }, {}, hooks);
    expect(JSON.parse(result.body.toString()).host).toBe(`rebind.example.test:${v4.port}`);
    expect(seen.resolved).toEqual(['rebind.example.test']);
    expect(seen.connected).toEqual(['127.0.0.1']);
  });

  it('connects only to checked addresses when a name has several', async (ctx) => {
    if (v6 === null) ctx.skip();
    const { seen, hooks } = recorder(async () => [
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ]);
    const result = await fetchGuarded(`http://both.example.test:${v6!.port}/ok`, LOCAL, {}, hooks);
    expect(result.body.toString()).toBe('hello');
    expect(seen.resolved).toEqual(['both.example.test']);
    expect(seen.connected).toEqual(['::1']);
  });

  it.runIf(hasOpenssl())('keeps the original name as TLS server name while connecting to the checked address', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'guarded-fetch-tls-'));
    try {
      selfSignedCertificate(dir, 'tls.example.test');
      const serverNames: string[] = [];
      const server = https.createServer(
        {
          key: readFileSync(join(dir, 'key.pem')),
          cert: readFileSync(join(dir, 'cert.pem')),
          SNICallback: (name, callback) => {
            serverNames.push(name);
            callback(null, undefined);
          },
        },
        (_req, res) => res.end('secret'),
      );
      server.on('tlsClientError', () => undefined);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      try {
        const { seen, hooks } = recorder(async () => [{ address: '127.0.0.1', family: 4 }]);
        // The certificate is self-signed, so verification fails: what matters is where the
        // socket went and which name it presented.
        const error = await fetchError(fetchGuarded(`https://tls.example.test:${port}/`, LOCAL, {}, hooks));
        expect(error).toMatchObject({ kind: 'network', message: `The TLS certificate of tls.example.test:${port} could not be verified.` });
        expect(seen.connected).toEqual(['127.0.0.1']);
        expect(serverNames).toEqual(['tls.example.test']);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('fetchGuarded: HTTPS', () => {
  it.runIf(hasOpenssl())('fetches over HTTPS from a server whose certificate the process trusts', async () => {
    // The trust store is read once per process (NODE_EXTRA_CA_CERTS): the fetch runs in a
    // child process, on the build of these sources (test/support/global-setup.ts).
    const dir = mkdtempSync(join(tmpdir(), 'guarded-fetch-https-'));
    const server = https.createServer({ ...selfSignedCertificate(dir, 'tls.example.test') }, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url, host: req.headers.host }));
    });
    try {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const script = join(dir, 'fetch.mjs');
      writeFileSync(
        script,
        `const { fetchGuarded } = await import(${JSON.stringify(builtModule('net/guarded-fetch.js').href)});
const policy = { timeoutMs: 5000, maxBytes: 1024 * 1024, maxRedirects: 5, allowNetworks: ['127.0.0.0/8'] };
const hooks = { resolve: async () => [{ address: '127.0.0.1', family: 4 }] };
const result = await fetchGuarded('https://tls.example.test:${port}/spec.json', policy, {}, hooks);
process.stdout.write(JSON.stringify({ url: result.url, status: result.status, contentType: result.contentType, body: result.body.toString() }));
`,
      );
      const { code, stdout, stderr } = await runNodeScript(script, { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') });
      expect(code, stderr).toBe(0);
      expect(JSON.parse(stdout)).toEqual({
        url: `https://tls.example.test:${port}/spec.json`,
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ path: '/spec.json', host: `tls.example.test:${port}` }),
      });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('fetchGuarded: redirects', () => {
  it('follows a chain of maxRedirects', async () => {
    const result = await fetchGuarded(`${v4.origin}/chain/5`, LOCAL);
    expect(result).toMatchObject({ url: `${v4.origin}/chain/0`, status: 200 });
    expect(result.body.toString()).toBe('end of chain');
  });

  it('refuses one redirect more than maxRedirects', async () => {
    const error = await fetchError(fetchGuarded(`${v4.origin}/chain/6`, LOCAL));
    expect(error).toMatchObject({ kind: 'too_many_redirects', url: `${v4.origin}/chain/1` });
    expect(error.message).toBe('The URL redirected more than 5 times.');
  });

  it('with maxRedirects 0, refuses any redirect', async () => {
    const error = await fetchError(fetchGuarded(`${v4.origin}/chain/1`, { ...LOCAL, maxRedirects: 0 }));
    expect(error.kind).toBe('too_many_redirects');
  });

  it('resolves a relative Location against the current URL', async () => {
    const result = await fetchGuarded(`${v4.origin}/relative/a/b`, LOCAL);
    expect(result.url).toBe(`${v4.origin}/relative/ok-rel?x=1`);
    expect(result.body.toString()).toBe('relative ?x=1');
  });

  it.each([301, 302, 303, 307, 308])('follows %i', async (status) => {
    const loc = encodeURIComponent(`${v4.origin}/ok`);
    const result = await fetchGuarded(`${v4.origin}/to?status=${status}&loc=${loc}`, LOCAL);
    expect(result.body.toString()).toBe('hello');
  });

  it('refuses a redirect from an allowed address to a refused one, without connecting there', async () => {
    const { seen, hooks } = recorder();
    const policy = { ...LOCAL, allowNetworks: ['127.0.0.1/32'] };
    const error = await fetchError(fetchGuarded(`${v4.origin}/to?loc=${encodeURIComponent('http://10.0.0.1/')}`, policy, {}, hooks));
    expect(error).toMatchObject({ kind: 'refused', url: 'http://10.0.0.1/' });
    expect(seen.connected).toEqual(['127.0.0.1']);

    const second = recorder();
    const loopbackElsewhere = `http://127.0.0.2:${v4.port}/ok`;
    const error2 = await fetchError(fetchGuarded(`${v4.origin}/to?loc=${encodeURIComponent(loopbackElsewhere)}`, policy, {}, second.hooks));
    expect(error2).toMatchObject({ kind: 'refused', url: loopbackElsewhere });
    expect(second.seen.connected).toEqual(['127.0.0.1']);
  });

  it('refuses a redirect to a name that resolves to a refused address', async () => {
    const { seen, hooks } = recorder(async (host) =>
      host === 'public.example.test' ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '192.168.0.10', family: 4 }],
    );
    const error = await fetchError(
      fetchGuarded(
        `http://public.example.test:${v4.port}/to?loc=${encodeURIComponent('http://intranet.example.test/')}`,
        { ...LOCAL, allowNetworks: ['127.0.0.1/32'] },
        {},
        hooks,
      ),
    );
    expect(error).toMatchObject({ kind: 'refused', url: 'http://intranet.example.test/' });
    expect(error.message).toBe(NAME_REFUSED('intranet.example.test'));
    expect(seen.connected).toEqual(['127.0.0.1']);
  });

  it.each([
    ['file:///etc/passwd', 'file:'],
    ['ftp://example.com/spec.yaml', 'ftp:'],
  ])('refuses a redirect to %s as bad_url', async (target, scheme) => {
    const error = await fetchError(fetchGuarded(`${v4.origin}/to?loc=${encodeURIComponent(target)}`, LOCAL));
    expect(error).toMatchObject({ kind: 'bad_url', url: target });
    expect(error.message).toBe(`The server at 127.0.0.1:${v4.port} redirected to a URL using ${scheme}; only http: and https: URLs can be fetched.`);
  });

  it('refuses a redirect to a URL with credentials as bad_url', async () => {
    const error = await fetchError(fetchGuarded(`${v4.origin}/to?loc=${encodeURIComponent(`http://u:p@127.0.0.1:${v4.port}/ok`)}`, LOCAL));
    expect(error.kind).toBe('bad_url');
  });

  it('treats a redirect without Location as http_status', async () => {
    const error = await fetchError(fetchGuarded(`${v4.origin}/no-location`, LOCAL));
    expect(error).toMatchObject({ kind: 'http_status', status: 302, url: `${v4.origin}/no-location` });
  });
});

describe('fetchGuarded: status, time and size limits', () => {
  it('turns a 404 into http_status with the status', async () => {
    const error = await fetchError(fetchGuarded(`${v4.origin}/missing`, LOCAL));
    expect(error).toMatchObject({ kind: 'http_status', status: 404, url: `${v4.origin}/missing` });
    expect(error.message).toBe(`The server at 127.0.0.1:${v4.port} answered with HTTP status 404.`);
  });

  it('times out on a server that sends headers and then stalls, at the deadline', async () => {
    const started = Date.now();
    const error = await fetchError(fetchGuarded(`${v4.origin}/stall`, { ...LOCAL, timeoutMs: 300 }));
    const elapsed = Date.now() - started;
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe(`The server at 127.0.0.1:${v4.port} did not answer completely within 300 ms.`);
    expect(elapsed).toBeGreaterThanOrEqual(280);
    expect(elapsed).toBeLessThan(1000);
  });

  it('applies one deadline across redirects', async () => {
    // Each hop answers within 120 ms, well under the deadline; together they exceed it.
    const started = Date.now();
    const error = await fetchError(fetchGuarded(`${v4.origin}/slow-chain/0`, { ...LOCAL, timeoutMs: 400, maxRedirects: 20 }));
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('rejects early when Content-Length exceeds maxBytes, closing the connection', async () => {
    streamLog.closed = false;
    const started = Date.now();
    const error = await fetchError(fetchGuarded(`${v4.origin}/declared-big`, LOCAL));
    expect(error.kind).toBe('too_large');
    expect(error.message).toBe(`The response from 127.0.0.1:${v4.port} is larger than the limit of 1 MiB.`);
    await waitFor(() => streamLog.closed);
    expect(streamLog.closedAt - started).toBeLessThan(1000);
  });

  it('stops a chunked stream as soon as it exceeds maxBytes, and the server sees the connection close', async () => {
    const error = await fetchError(fetchGuarded(`${v4.origin}/endless`, { ...LOCAL, maxBytes: 256 * 1024 }));
    expect(error.kind).toBe('too_large');
    await waitFor(() => streamLog.closed);
    // The server stopped long before its 512 MiB: socket buffers hold at most a few MiB.
    expect(streamLog.bytesWritten).toBeLessThan(32 * 1024 * 1024);
  });

  it('prefixBytes: the first bytes of a body over the limit (endless, or a bomb), and the stream stopped', async () => {
    for (const path of ['/endless', '/bomb']) {
      const res = await fetchGuarded(`${v4.origin}${path}`, LOCAL, { prefixBytes: 64 * 1024 });
      expect(res.body.length, path).toBe(64 * 1024);
    }
    await waitFor(() => streamLog.closed);
    // Never more than the policy's limit, whatever is asked.
    expect((await fetchGuarded(`${v4.origin}/endless`, { ...LOCAL, maxBytes: 1024 }, { prefixBytes: 64 * 1024 })).body.length).toBe(1024);
  });

  it('caps a gzip bomb on the decoded bytes', async () => {
    expect(bomb.length).toBeLessThan(LOCAL.maxBytes);
    const error = await fetchError(fetchGuarded(`${v4.origin}/bomb`, LOCAL));
    expect(error.kind).toBe('too_large');
  });

  it('honours the caller signal', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    setTimeout(() => controller.abort(reason), 100);
    // The reason itself, not a timeout: the signal ended the stalled request.
    await expect(fetchGuarded(`${v4.origin}/stall`, LOCAL, { signal: controller.signal })).rejects.toBe(reason);
    await expect(fetchGuarded(`${v4.origin}/ok`, LOCAL, { signal: controller.signal })).rejects.toBe(reason);
  });
});

describe('fetchGuarded: network failures', () => {
  it('reports a refused connection as network', async () => {
    const closed = await startServer('127.0.0.1', (_req, res) => res.end());
    const url = `${closed.origin}/`;
    await closed.close();
    const error = await fetchError(fetchGuarded(url, LOCAL));
    expect(error).toMatchObject({ kind: 'network', url });
    expect(error.message).toBe(`The server at ${new URL(url).host} refused the connection.`);
  });

  it('reports a name that does not resolve as network', async () => {
    const { hooks } = recorder(async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example.test'), { code: 'ENOTFOUND' });
    });
    const error = await fetchError(fetchGuarded('http://nowhere.example.test/', STRICT, {}, hooks));
    expect(error).toMatchObject({ kind: 'network', message: 'The host name nowhere.example.test could not be resolved.' });
  });

  it('leaves no timer or socket behind', async () => {
    const count = (type: string): number => process.getActiveResourcesInfo().filter((t) => t === type).length;
    await fetchGuarded(`${v4.origin}/ok`, LOCAL); // warm up
    await new Promise((resolve) => setImmediate(resolve));
    const timers = count('Timeout');
    const sockets = count('TCPSocketWrap');
    await fetchGuarded(`${v4.origin}/ok`, LOCAL);
    await fetchError(fetchGuarded(`${v4.origin}/missing`, LOCAL));
    await fetchError(fetchGuarded(`${v4.origin}/endless`, { ...LOCAL, maxBytes: 1024 }));
    await fetchError(fetchGuarded(`${v4.origin}/stall`, { ...LOCAL, timeoutMs: 100 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(count('Timeout')).toBeLessThanOrEqual(timers);
    expect(count('TCPSocketWrap')).toBeLessThanOrEqual(sockets);
  });
});

describe('fetchGuarded: policy', () => {
  it.each<[Partial<FetchPolicy>, string]>([
    [{ timeoutMs: 0 }, 'timeoutMs'],
    [{ maxBytes: -1 }, 'maxBytes'],
    [{ maxRedirects: 1.5 }, 'maxRedirects'],
    [{ allowNetworks: ['127.0.0.0/8', 'bogus'] }, 'bogus'],
  ])('rejects a malformed policy %j', async (override, mention) => {
    await expect(fetchGuarded(`${v4.origin}/ok`, { ...LOCAL, ...override })).rejects.toThrow(mention);
  });
});

describe('fetchGuarded: minimum transfer rate (issue 13 §3)', () => {
  let drip: LocalServer;
  beforeAll(async () => {
    drip = await startServer('127.0.0.1', (req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/drip') {
        // One byte every 50 ms, never ending: 20 bytes per second.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('x'), 50);
        res.on('close', () => clearInterval(timer));
      } else if (path === '/steady') {
        // 2 KiB every 50 ms for 10 rounds: 40 KiB per second, then the end.
        res.writeHead(200, { 'content-type': 'text/plain' });
        let rounds = 0;
        const timer = setInterval(() => {
          res.write(Buffer.alloc(2048, 0x73));
          if (++rounds === 10) {
            clearInterval(timer);
            res.end();
          }
        }, 50);
        res.on('close', () => clearInterval(timer));
      } else if (path === '/late-headers') {
        // Slow to start (longer than a window), then the whole body at once.
        setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('late but whole'), 400);
      } else {
        res.writeHead(404).end();
      }
    });
  });
  afterAll(async () => drip?.close());

  const RATE: FetchPolicy = { ...LOCAL, timeoutMs: 10_000, minBytesPerSecond: 1024, minRateWindowMs: 200 };

  it('fails a body that arrives slower than minBytesPerSecond over a window, with its own kind and message', async () => {
    const error = await fetchError(fetchGuarded(`${drip.origin}/drip`, RATE));
    expect(error).toMatchObject({ kind: 'too_slow', url: `${drip.origin}/drip` });
    expect(error.message).toBe(`The server at 127.0.0.1:${drip.port} sent its answer too slowly (less than 1 KiB per second over 200 ms).`);
  });

  it('accepts a body that keeps up with the rate, and time before the headers is not counted', async () => {
    expect((await fetchGuarded(`${drip.origin}/steady`, RATE)).body.length).toBe(20 * 1024);
    expect((await fetchGuarded(`${drip.origin}/late-headers`, RATE)).body.toString()).toBe('late but whole');
  });

  it('without minBytesPerSecond a drip runs into the deadline instead', async () => {
    const error = await fetchError(fetchGuarded(`${drip.origin}/drip`, { ...LOCAL, timeoutMs: 300 }));
    expect(error.kind).toBe('timeout');
  });

  it.each<[Partial<FetchPolicy>, string]>([
    [{ minBytesPerSecond: -1 }, 'minBytesPerSecond'],
    [{ minBytesPerSecond: 10, minRateWindowMs: 0 }, 'minRateWindowMs'],
  ])('rejects a malformed rate policy %j', async (override, mention) => {
    await expect(fetchGuarded(`${drip.origin}/steady`, { ...LOCAL, ...override })).rejects.toThrow(mention);
  });
});

describe('fetchGuarded: malformed answers are bad_response (final, not retried; issue 13 §4)', () => {
  let odd: LocalServer;
  let raw: net.Server;
  let rawPort = 0;
  beforeAll(async () => {
    odd = await startServer('127.0.0.1', (req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const text = { 'content-type': 'text/plain' };
      if (path === '/bad-gzip') res.writeHead(200, { ...text, 'content-encoding': 'gzip' }).end('this is not gzip at all');
      else if (path === '/bad-br') res.writeHead(200, { ...text, 'content-encoding': 'br' }).end('this is not brotli either!');
      else if (path === '/bad-deflate') res.writeHead(200, { ...text, 'content-encoding': 'deflate' }).end('nor deflate');
      else if (path === '/unknown-coding') res.writeHead(200, { ...text, 'content-encoding': 'x-snappy' }).end('\u0000\u0001\u0002packed');
      else if (path === '/mixed-coding') res.writeHead(200, { ...text, 'content-encoding': 'gzip, x-snappy' }).end(gzipSync('hidden'));
      else if (path === '/many-codings') res.writeHead(200, { ...text, 'content-encoding': 'gzip, gzip, gzip, gzip, gzip, gzip' }).end('x');
      else if (path === '/identity') res.writeHead(200, { ...text, 'content-encoding': 'identity' }).end('plain after all');
      else if (path === '/huge-headers') res.writeHead(200, { ...text, 'x-padding': 'a'.repeat(100_000) }).end('hello');
      else res.writeHead(404).end();
    });
    raw = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', (request) => {
        const path = / (\S+) HTTP/.exec(request.toString())?.[1];
        const ok = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n';
        if (path === '/1xx-flood') {
          // Informational answers without end, never the final one.
          const early = 'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n'.repeat(200);
          const flood = setInterval(() => (socket.destroyed ? clearInterval(flood) : socket.write(early)), 5);
          socket.on('close', () => clearInterval(flood));
        } else if (path === '/two-lengths') socket.end(`${ok}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`);
        else if (path === '/length-and-chunked') socket.end(`${ok}Content-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
        else if (path === '/huge-length') socket.end(`${ok}Content-Length: 99999999999999999999999\r\n\r\nhello`);
        else socket.end(`${ok}This Is Not A Header\r\n\r\nhello`);
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    rawPort = (raw.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await odd?.close();
    await new Promise<void>((resolve) => (raw ? raw.close(() => resolve()) : resolve()));
  });

  it.each([
    ['/bad-gzip', 'could not be decompressed'],
    ['/bad-br', 'could not be decompressed'],
    ['/bad-deflate', 'could not be decompressed'],
    ['/unknown-coding', 'uses a content coding (x-snappy) that cannot be decoded'],
    ['/mixed-coding', 'uses a content coding (x-snappy) that cannot be decoded'],
    ['/many-codings', 'content coding'],
    ['/huge-headers', 'headers'],
  ])('%s → bad_response', async (path, words) => {
    const error = await fetchError(fetchGuarded(`${odd.origin}${path}`, LOCAL));
    expect(error.kind).toBe('bad_response');
    expect(error.message).toContain(`127.0.0.1:${odd.port}`);
    expect(error.message).toContain(words);
  });

  it('an answer that is not HTTP → bad_response', async () => {
    const error = await fetchError(fetchGuarded(`http://127.0.0.1:${rawPort}/`, LOCAL));
    expect(error).toMatchObject({ kind: 'bad_response', message: `The server at 127.0.0.1:${rawPort} sent an answer that is not valid HTTP.` });
  });

  it('an answer framed two ways at once (two Content-Lengths, Content-Length and chunked, a length past any number) → bad_response, not a network failure retried (outbound sweep)', async () => {
    for (const path of ['/two-lengths', '/length-and-chunked', '/huge-length']) {
      const error = await fetchError(fetchGuarded(`http://127.0.0.1:${rawPort}${path}`, LOCAL));
      expect(error.kind, path).toBe('bad_response');
    }
  });

  it('informational (1xx) answers without end → bad_response at once, not a process busy with them until the deadline (outbound sweep: 100% CPU for the 10 s)', async () => {
    const error = await fetchError(fetchGuarded(`http://127.0.0.1:${rawPort}/1xx-flood`, { ...LOCAL, timeoutMs: 3000 }));
    expect(error).toMatchObject({
      kind: 'bad_response',
      message: `The server at 127.0.0.1:${rawPort} sent more than 20 informational (1xx) answers before its answer.`,
    });
  });

  it('Content-Encoding: identity is the body as sent', async () => {
    expect((await fetchGuarded(`${odd.origin}/identity`, LOCAL)).body.toString()).toBe('plain after all');
  });
});

// Kinds are a closed list shared with callers; keep this in sync with the type.
const _kinds: Record<FetchErrorKind, true> = {
  bad_url: true,
  refused: true,
  timeout: true,
  too_large: true,
  too_many_redirects: true,
  http_status: true,
  network: true,
  too_slow: true,
  bad_response: true,
};
void _kinds;

async function waitFor(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A self-signed certificate for `name` (key.pem, cert.pem in `dir`). */
function selfSignedCertificate(dir: string, name: string): { key: Buffer; cert: Buffer } {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-addext',
      `subjectAltName=DNS:${name}`,
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
}

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
