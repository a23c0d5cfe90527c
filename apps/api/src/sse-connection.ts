import type { Response } from 'express';
import type { ApiContext } from './context.ts';
import { SseStream } from './sse.ts';

/** A slow client whose unsent output exceeds this is dropped; it reconnects with Last-Event-ID. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/**
 * One SSE response's life: the tenant's stream slot, the heartbeat stream, the open-streams
 * gauge, and ONE finish (the client left, the server is stopping, the stream is complete) that
 * undoes all of them and every subscription handed to it.
 */
export interface SseConnection {
  readonly stream: SseStream;
  readonly finished: boolean;
  readonly finish: () => void;
  /** Unsubscribes when the connection finishes; at once if it already has. */
  readonly adopt: (unsubscribe: () => Promise<void>) => Promise<void>;
}

export async function openSseConnection(
  ctx: ApiContext,
  res: Response,
  tenantId: string,
): Promise<SseConnection> {
  const release = await ctx.sseLimiter.acquire(tenantId);
  const stream = new SseStream(res, ctx.config.SSE_HEARTBEAT_MS);
  ctx.metrics.sseConnections.inc();
  const unsubscribes: (() => Promise<void>)[] = [];
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    ctx.streams.delete(finish);
    stream.close();
    release();
    ctx.metrics.sseConnections.dec();
    for (const u of unsubscribes) void u().catch(() => undefined);
  };
  ctx.streams.add(finish);
  res.on('close', finish);
  return {
    stream,
    get finished() {
      return finished;
    },
    finish,
    adopt: async (unsubscribe) => {
      if (finished) await unsubscribe().catch(() => undefined);
      else unsubscribes.push(unsubscribe);
    },
  };
}
