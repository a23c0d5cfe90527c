import { Router } from 'express';
import { principalOf } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { notFound } from '../errors.ts';
import { ThreadRunsQuerySchema } from '../schemas.ts';
import { parseId, parseQuery } from '../validation.ts';

export function threadsRouter(ctx: ApiContext): Router {
  const router = Router();

  /** History (messages of finished runs), active run, queued runs. Threads are per tenant. */
  router.get('/threads/:id', async (req, res) => {
    const { tenantId } = principalOf(req);
    const threadId = parseId(req.params['id'], 'thread id');
    const thread = await ctx.service.thread(tenantId, threadId);
    if (thread.runIds.length === 0 && thread.activeRunId === null)
      throw notFound(`thread ${threadId} was not found`);
    res.json({ threadId, ...thread });
  });

  /** Deletes the thread and its finished runs (409 thread_busy while a run is active or queued). */
  router.delete('/threads/:id', async (req, res) => {
    const { tenantId } = principalOf(req);
    const threadId = parseId(req.params['id'], 'thread id');
    const { runs } = await ctx.service.deleteThread(tenantId, threadId);
    res.json({ threadId, deletedRuns: runs });
  });

  router.get('/threads/:id/runs', async (req, res) => {
    const { tenantId } = principalOf(req);
    const threadId = parseId(req.params['id'], 'thread id');
    const query = parseQuery(ThreadRunsQuerySchema, req);
    const page = await ctx.service.listRuns({
      tenantId,
      threadId,
      ...(query.status ? { status: query.status } : {}),
      ...(query.agent ? { agent: query.agent } : {}),
      cursor: query.cursor ?? null,
      limit: query.limit ?? 20,
    });
    if (page.runs.length === 0 && query.cursor === undefined) {
      const thread = await ctx.service.thread(tenantId, threadId);
      if (thread.runIds.length === 0) throw notFound(`thread ${threadId} was not found`);
    }
    res.json(page);
  });

  return router;
}
