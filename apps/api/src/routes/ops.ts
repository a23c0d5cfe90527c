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

/** Longest a readiness check may take (the route answers within about this long). */
const READY_BUDGET_MS = 400;

/** Unauthenticated operational surfaces: health, readiness, metrics, the OpenAPI document. */
export function opsRouter(ctx: ApiContext): Router {
  const router = Router();
  let openapi: string | undefined;

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  /**
   * Answers within READY_BUDGET_MS whatever Redis does: a disconnected client is not ready at
   * once, and each check has its own deadline (a load balancer must never wait on us).
   */
  router.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    const probe = async (name: string, work: () => Promise<unknown>): Promise<void> => {
      try {
        await withTimeout(work(), READY_BUDGET_MS, name);
        checks[name] = 'ok';
      } catch (err) {
        checks[name] = err instanceof Error ? err.message : 'unavailable';
      }
    };
    const { health } = ctx;
    const status = health.redisStatus();
    let live: number | undefined;
    if (status !== 'ready') {
      checks['redis'] = `not connected (${status})`;
      checks['queues'] = 'unusable without redis';
    } else {
      let count: number | undefined;
      await Promise.all([
        probe('redis', () => health.ping()),
        probe('queues', () => health.queuesAnswer()),
        withTimeout(health.liveWorkers(), READY_BUDGET_MS, 'workers').then(
          (n) => void (count = n),
          () => undefined,
        ),
      ]);
      live = count;
    }
    const ok = Object.values(checks).every((c) => c === 'ok');
    if (!ok) res.setHeader('Retry-After', '1');
    // Workers are reported, never a condition: the API takes runs without any (they wait in
    // their queues), so a load balancer must not take it out of service when workers are down.
    const workers =
      live === undefined ? {} : { workers: { live, state: live > 0 ? 'up' : 'down' } };
    res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'unavailable', checks, ...workers });
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
