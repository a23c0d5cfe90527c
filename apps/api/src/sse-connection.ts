import type { Response } from 'express';
import type { ApiContext } from './context.ts';
import { SseStream } from './sse.ts';

/** A slow client whose unsent output exceeds this is dropped; it reconnects with Last-Event-ID. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

type Unsubscribe = () => Promise<void>;

/**
 * One SSE response's life: the tenant's stream slot, the heartbeat stream, the open-streams
 * gauge, and ONE finish (the client left, the server is stopping, the stream is complete) that
 * undoes all of them and every subscription handed to it.
 *
 * One object per open stream, held for as long as the stream is: its state is fields, not a
 * closure scope per connection (thousands of subscribers hold thousands of these).
 */
export class SseConnection {
  readonly stream: SseStream;
  readonly res: Response;
  /**
   * Called once by finish, before the stream closes: what its owner still writes (a protocol's
   * closing frames, on shutdown too) goes out first.
   */
  onFinish: (() => void) | undefined;
  private readonly ctx: ApiContext;
  private readonly release: () => void;
  /** The usual case is one subscription: no array for it. */
  private unsubscribe: Unsubscribe | undefined;
  private more: Unsubscribe[] | undefined;
  private done = false;
  /** Forgets this stream in the token streams registry (streams opened with a token). */
  private readonly untrack: (() => void) | undefined;

  /** `headers`: a protocol's own response headers (see SseStream). */
  constructor(
    ctx: ApiContext,
    res: Response,
    release: () => void,
    headers?: Readonly<Record<string, string>>,
  ) {
    this.ctx = ctx;
    this.res = res;
    this.release = release;
    this.stream = new SseStream(res, ctx.config.SSE_HEARTBEAT_MS, headers);
    ctx.metrics.sseConnections.inc();
    ctx.streams.add(this.finish);
    res.on('close', this.finish);
    // A stream opened with a token closes when the token is revoked, on every API.
    // (a test's stand-in response may have no request)
    const principal = (res.req as Response['req'] | undefined)?.principal;
    const id = principal?.credential.id;
    if (principal && principal.scopes !== null && id !== undefined)
      this.untrack = ctx.tokens.streams.track(
        {
          tenantId: principal.tenantId,
          jti: id,
          issuedAt: principal.credential.issuedAt ?? 0,
          ...(principal.subject !== undefined ? { subject: principal.subject } : {}),
        },
        this.finish,
      );
  }

  get finished(): boolean {
    return this.done;
  }

  /** A function of its own (a 'close' listener, an entry of ctx.streams, handed around). */
  readonly finish = (): void => {
    if (this.done) return;
    this.done = true;
    this.onFinish?.();
    this.ctx.streams.delete(this.finish);
    this.untrack?.();
    this.stream.close();
    this.release();
    this.ctx.metrics.sseConnections.dec();
    if (this.unsubscribe) void this.unsubscribe().catch(() => undefined);
    if (this.more) for (const u of this.more) void u().catch(() => undefined);
  };

  /** The client reads too slowly: its unsent output is over MAX_BUFFERED_BYTES. */
  overBuffered(): boolean {
    return this.res.writableLength > MAX_BUFFERED_BYTES;
  }

  /** Unsubscribes when the connection finishes; at once if it already has. */
  async adopt(unsubscribe: Unsubscribe): Promise<void> {
    if (this.done) await unsubscribe().catch(() => undefined);
    else if (this.unsubscribe === undefined) this.unsubscribe = unsubscribe;
    else (this.more ??= []).push(unsubscribe);
  }
}

export async function openSseConnection(
  ctx: ApiContext,
  res: Response,
  tenantId: string,
): Promise<SseConnection> {
  const release = await ctx.sseLimiter.acquire(tenantId);
  return new SseConnection(ctx, res, release);
}
