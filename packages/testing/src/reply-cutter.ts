/**
 * Test fixture: a TCP proxy in front of Redis that can lose a reply. Armed, it forwards the next
 * command to Redis as usual (Redis runs it) but, instead of passing Redis's reply back, closes
 * both sockets: what a client sees when Redis restarts, or the network drops, between applying a
 * command and answering it. ioredis then reconnects (through the proxy again) and re-sends the
 * unanswered command, so a write that is not idempotent lands twice.
 */
import { startTcpProxy } from './tcp-proxy.ts';

export interface ReplyCutter {
  readonly url: string;
  /** Lose the next reply Redis sends on any connection; resolves once one was lost. */
  cutNextReply(): Promise<void>;
  close(): Promise<void>;
}

export async function startReplyCutter(redisUrl: string): Promise<ReplyCutter> {
  const target = new URL(redisUrl);
  let armed: (() => void) | null = null;
  const proxy = await startTcpProxy({
    host: target.hostname,
    backendPort: () => Number(target.port),
    onReply: (_chunk, drop) => {
      if (!armed) return true;
      const done = armed;
      armed = null;
      drop();
      done();
      return false;
    },
  });
  return {
    url: `redis://127.0.0.1:${String(proxy.port)}`,
    cutNextReply: () =>
      new Promise<void>((resolve) => {
        armed = resolve;
      }),
    close: () => proxy.close(),
  };
}
