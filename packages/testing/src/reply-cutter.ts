/**
 * Test fixture: a TCP proxy in front of Redis that can lose a reply. Armed, it forwards the next
 * command to Redis as usual (Redis runs it) but, instead of passing Redis's reply back, closes
 * both sockets: what a client sees when Redis restarts, or the network drops, between applying a
 * command and answering it. ioredis then reconnects (through the proxy again) and re-sends the
 * unanswered command, so a write that is not idempotent lands twice.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ReplyCutter {
  readonly url: string;
  /** Lose the next reply Redis sends on any connection; resolves once one was lost. */
  cutNextReply(): Promise<void>;
  close(): Promise<void>;
}

export async function startReplyCutter(redisUrl: string): Promise<ReplyCutter> {
  const target = new URL(redisUrl);
  const sockets = new Set<Socket>();
  let armed: (() => void) | null = null;
  const server: Server = createServer((client) => {
    const backend = createConnection({ host: target.hostname, port: Number(target.port) });
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
    backend.on('data', (chunk: Buffer) => {
      if (armed) {
        const done = armed;
        armed = null;
        drop();
        done();
        return;
      }
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${String(port)}`,
    cutNextReply: () =>
      new Promise<void>((resolve) => {
        armed = resolve;
      }),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
