/**
 * A local web site for the knowledge-base tests: pages by path, a count of requests per
 * path, and holds (a request waits, or stalls for good, until the test releases it).
 * Listens on 127.0.0.1, port 0; the fetcher reaches it because the tests allow
 * 127.0.0.0/8 (FETCH_ALLOW_NETWORKS).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Page {
  status?: number;
  /** Content-Type header; null sends none. Defaults to text/html; charset=utf-8. */
  type?: string | null;
  body?: string | Buffer;
  /** Wait this long before answering (a slow server). */
  delayMs?: number;
}

export type PageHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>;

export interface Hold {
  /** Resolves when a request for the path has arrived (and is now waiting). */
  arrived: Promise<void>;
  /** Lets the waiting request (and later ones) be answered with the page as it is then. */
  release(): void;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class PageServer {
  readonly origin: string;
  /** Requests received per path (counted on arrival). */
  readonly requests = new Map<string, number>();
  private readonly pages = new Map<string, Page | PageHandler>();
  private readonly holds = new Map<string, { arrived: () => void; released: Promise<void> }>();
  private readonly arrivalWaiters: Array<() => void> = [];

  private constructor(
    private readonly server: http.Server,
    private readonly sockets: Set<Socket>,
    port: number,
  ) {
    this.origin = `http://127.0.0.1:${port}`;
  }

  static async start(): Promise<PageServer> {
    const sockets = new Set<Socket>();
    let self: PageServer | null = null;
    const server = http.createServer((req, res) => {
      void self!.handle(req, res).catch(() => res.destroy());
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    self = new PageServer(server, sockets, (server.address() as AddressInfo).port);
    return self;
  }

  url(path: string): string {
    return `${this.origin}${path}`;
  }

  set(path: string, page: Page | PageHandler): this {
    this.pages.set(path, page);
    return this;
  }

  count(path: string): number {
    return this.requests.get(path) ?? 0;
  }

  /** Requests for `path` wait from now on until `release()`; `arrived` says when the first is here. */
  hold(path: string): Hold {
    let arrived!: () => void;
    const arrivedPromise = new Promise<void>((resolve) => (arrived = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holds.set(path, { arrived, released });
    return {
      arrived: arrivedPromise,
      release: () => {
        this.holds.delete(path);
        release();
      },
    };
  }

  /** Resolves once `test()` holds after some request arrived (checked on every arrival). */
  async waitForRequests(test: () => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!test()) {
      if (Date.now() > deadline) throw new Error('Timed out waiting for requests to the page server');
      await Promise.race([new Promise<void>((resolve) => this.arrivalWaiters.push(resolve)), sleep(100)]);
    }
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    this.requests.set(path, this.count(path) + 1);
    for (const wake of this.arrivalWaiters.splice(0)) wake();
    const hold = this.holds.get(path);
    if (hold) {
      hold.arrived();
      await hold.released;
    }
    const page = this.pages.get(path);
    if (page === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    if (typeof page === 'function') {
      await page(req, res);
      return;
    }
    if (page.delayMs) await sleep(page.delayMs);
    const type = page.type === undefined ? 'text/html; charset=utf-8' : page.type;
    res.writeHead(page.status ?? 200, type === null ? {} : { 'content-type': type });
    res.end(page.body ?? '');
  }

  async close(): Promise<void> {
    for (const hold of [...this.holds.keys()]) this.holds.delete(hold);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** An HTML page with the usual boilerplate around an article of `words`. */
export function articlePage(title: string, words: string): string {
  return `<!doctype html><html><head><title>${title}</title></head><body>
<nav><a href="/">Home</a></nav>
<main><article><h1>${title}</h1><p>${words}</p></article></main>
</body></html>`;
}
