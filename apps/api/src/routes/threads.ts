import { Router } from 'express';
import { principalOf } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { notFound } from '../errors.ts';
import { ThreadRunsQuerySchema } from '../schemas.ts';
import { parseId, parseQuery } from '../validation.ts';
import {
  commonErrors,
  error,
  json,
  queryParameters,
  threadIdParam,
  type OpenApiPaths,
} from '../openapi/shared.ts';

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

/** OpenAPI paths of threadsRouter. */
export const threadsPaths: OpenApiPaths = {
  '/v1/threads/{id}': {
    get: {
      tags: ['threads'],
      operationId: 'getThread',
      summary: 'Thread history, active run and queued runs',
      parameters: [threadIdParam],
      responses: {
        '200': json('Thread', 'Thread'),
        ...commonErrors,
        '404': error('not_found'),
      },
    },
    delete: {
      tags: ['threads'],
      operationId: 'deleteThread',
      summary: 'Delete a thread, its history and its finished runs',
      parameters: [threadIdParam],
      responses: {
        '200': json('DeleteThreadResponse', 'Deleted'),
        ...commonErrors,
        '404': error('not_found'),
        '409': error('thread_busy: a run is active or queued on the thread'),
      },
    },
  },
  '/v1/threads/{id}/runs': {
    get: {
      tags: ['threads'],
      operationId: 'listThreadRuns',
      summary: "The thread's runs, newest first",
      parameters: [threadIdParam, ...queryParameters(ThreadRunsQuerySchema)],
      responses: {
        '200': json('RunPage', 'A page of runs'),
        ...commonErrors,
        '404': error('not_found'),
      },
    },
  },
};
