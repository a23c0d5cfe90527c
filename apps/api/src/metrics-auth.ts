import { createHash, timingSafeEqual } from 'node:crypto';
import { BatonError } from '@baton/core';
import type { RequestHandler } from 'express';
import { presentedKey, type KeyStore } from './auth.ts';

const digest = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

/**
 * /metrics shows the whole cluster (runs, queues, latencies), so by default it needs a key:
 * METRICS_KEY (what a Prometheus scrape config sends as a bearer token) or an admin key.
 * METRICS_PUBLIC=true opens it for scrapers on a private network.
 */
export function metricsAuth(opts: {
  readonly keys: KeyStore;
  readonly metricsKey: string | undefined;
  readonly public: boolean;
}): RequestHandler {
  const expected = opts.metricsKey === undefined ? undefined : digest(opts.metricsKey);
  return (req, _res, next) => {
    if (opts.public) {
      next();
      return;
    }
    const key = presentedKey(req);
    if (key === null) {
      next(
        new BatonError(
          'unauthorized',
          '/metrics needs a key: send Authorization: Bearer <METRICS_KEY or an admin key>',
        ),
      );
      return;
    }
    if (expected !== undefined && timingSafeEqual(digest(key), expected)) {
      next();
      return;
    }
    const principal = opts.keys.verify(key);
    if (principal?.admin) next();
    else if (principal)
      next(new BatonError('forbidden', '/metrics needs METRICS_KEY or an admin key'));
    else next(new BatonError('unauthorized', 'invalid key for /metrics'));
  };
}
