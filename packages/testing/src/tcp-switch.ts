/**
 * Test fixture: a TCP front door (what a load balancer is in production) that sends each new
 * connection to the current backend port. When a backend's socket closes — its process was
 * killed — the client's socket is destroyed too, exactly as a client talking to that process
 * directly would see it; the client's reconnect then lands on whatever backend is current.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpSwitch {
  readonly url: string;
  /** Where new connections go. */
  target: number;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  close(): Promise<void>;
}

export async function startTcpSwitch(target: number): Promise<TcpSwitch> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const sw: { target: number } = { target };
  const server: Server = createServer((client) => {
    accepted += 1;
    const backend = createConnection({ host: '127.0.0.1', port: sw.target });
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
    backend.pipe(client);
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    get target() {
      return sw.target;
    },
    set target(value: number) {
      sw.target = value;
    },
    accepted: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((res) => server.close(() => res()));
    },
  };
}
