/**
 * Test fixture: a TCP proxy on a free loopback port that pairs each accepted connection with a
 * new one to a backend and tears both down together, as a client talking to that backend
 * directly would see it. The front door of tcp-switch.ts and reply-cutter.ts.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxyOptions {
  /** The backend's host (default 127.0.0.1). */
  readonly host?: string;
  /** The backend port for a new connection (read at each accept). */
  readonly backendPort: () => number;
  /**
   * Each chunk the backend sends; answer false to swallow it. `drop` closes both sockets of
   * this pair. Absent: every chunk is passed on.
   */
  readonly onReply?: (chunk: Buffer, drop: () => void) => boolean;
}

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  close(): Promise<void>;
}

export async function startTcpProxy(opts: TcpProxyOptions): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted += 1;
    const backend = createConnection({ host: opts.host ?? '127.0.0.1', port: opts.backendPort() });
    sockets.add(client);
    sockets.add(backend);
    const drop = (): void => {
      client.destroy();
      backend.destroy();
      sockets.delete(client);
      sockets.delete(backend);
    };
    client.on('error', drop).on('close', drop);
    backend.on('error', drop).on('close', drop);
    client.pipe(backend);
    const { onReply } = opts;
    if (onReply === undefined) backend.pipe(client);
    else
      backend.on('data', (chunk: Buffer) => {
        if (onReply(chunk, drop)) client.write(chunk);
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    accepted: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
