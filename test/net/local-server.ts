/** A local HTTP server for the fetcher's tests that counts connections and can be torn down at once. */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface LocalServer {
  server: http.Server;
  host: string;
  port: number;
  /** Base URL, e.g. http://127.0.0.1:12345 or http://[::1]:12345 */
  origin: string;
  /** TCP connections accepted so far. */
  connections: number;
  close(): Promise<void>;
}

export async function startServer(host: string, handler: http.RequestListener): Promise<LocalServer> {
  const server = http.createServer(handler);
  const sockets = new Set<Socket>();
  const state = { connections: 0 };
  server.on('connection', (socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
  return {
    server,
    host,
    port,
    origin,
    get connections() {
      return state.connections;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Whether this machine can listen on ::1 (some containers have no IPv6 loopback). */
export async function canListenOnIpv6Loopback(): Promise<boolean> {
  try {
    const probe = await startServer('::1', (_req, res) => res.end());
    await probe.close();
    return true;
  } catch {
    return false;
  }
}
