import { Router } from 'express';
import type { ApiContext } from '../context.ts';
import { buildOpenApiDocument } from '../openapi.ts';

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Unauthenticated operational surfaces: health, readiness, metrics, the OpenAPI document. */
export function opsRouter(ctx: ApiContext): Router {
  const router = Router();
  let openapi: string | undefined;

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    try {
      await withTimeout(ctx.runtime.redis.ping(), 2_000, 'redis');
      checks['redis'] = 'ok';
    } catch (err) {
      checks['redis'] = err instanceof Error ? err.message : 'unreachable';
    }
    try {
      await withTimeout(
        Promise.all([
          ctx.runtime.queues.steps.getJobCounts('waiting'),
          ctx.runtime.queues.tools.getJobCounts('waiting'),
        ]),
        2_000,
        'queues',
      );
      checks['queues'] = 'ok';
    } catch (err) {
      checks['queues'] = err instanceof Error ? err.message : 'unusable';
    }
    const ok = Object.values(checks).every((c) => c === 'ok');
    res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'unavailable', checks });
  });

  router.get('/metrics', async (_req, res) => {
    const body = await ctx.metrics.registry.metrics();
    res.setHeader('Content-Type', ctx.metrics.registry.contentType);
    res.send(body);
  });

  router.get('/openapi.json', (_req, res) => {
    openapi ??= JSON.stringify(buildOpenApiDocument());
    res.type('application/json').send(openapi);
  });

  return router;
}
