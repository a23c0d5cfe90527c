import type { RequestHandler } from 'express';
import { RateLimitedError } from './errors.ts';

/** Concurrent SSE streams per tenant on this instance; over the limit is a 429 with Retry-After. */
export class SseConnectionLimiter {
  private readonly max: number;
  private readonly open = new Map<string, number>();

  constructor(max: number) {
    this.max = max;
  }

  count(tenantId: string): number {
    return this.open.get(tenantId) ?? 0;
  }

  /** Takes a slot or throws 429; the returned function gives it back (idempotent). */
  acquire(tenantId: string): () => void {
    const current = this.count(tenantId);
    if (current >= this.max)
      throw new RateLimitedError(
        `tenant ${tenantId} already has ${current} open event streams (limit ${this.max}); close one or retry later`,
        5,
        { limit: this.max },
      );
    this.open.set(tenantId, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = this.count(tenantId) - 1;
      if (n <= 0) this.open.delete(tenantId);
      else this.open.set(tenantId, n);
    };
  }
}

/** Fixed one-minute window of requests per tenant on this instance (0 = unlimited). */
export function rateLimit(perMinute: number, now: () => number = Date.now): RequestHandler {
  const windows = new Map<string, { start: number; count: number }>();
  return (req, _res, next) => {
    const tenant = req.principal?.tenantId;
    if (perMinute <= 0 || tenant === undefined) {
      next();
      return;
    }
    const t = now();
    let w = windows.get(tenant);
    if (!w || t - w.start >= 60_000) {
      if (windows.size > 10_000) windows.clear();
      w = { start: t, count: 0 };
      windows.set(tenant, w);
    }
    w.count += 1;
    if (w.count > perMinute) {
      next(
        new RateLimitedError(
          `rate limit of ${perMinute} requests per minute exceeded`,
          (w.start + 60_000 - t) / 1000,
          { limitPerMinute: perMinute },
        ),
      );
      return;
    }
    next();
  };
}
