import { Router } from 'express';
import { principalOf } from '../auth.ts';
import { narrowRuns } from '../authz/authorize-request.ts';
import type { ApiContext } from '../context.ts';
import { badRequest, notFound } from '../errors.ts';
import { THREAD_PAGE_DEFAULT, THREAD_PAGE_MAX_BYTES } from '@baton/runtime';
import { ThreadQuerySchema, ThreadRunsQuerySchema } from '../schemas.ts';
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

  /**
   * A page of the history (messages of finished runs; the newest first page, older ones by
   * cursor), active run, queued runs, runs. Threads are per tenant.
   */
  router.get('/threads/:id', async (req, res) => {
    const { tenantId } = principalOf(req);
    const threadId = parseId(req.params['id'], 'thread id');
    const query = parseQuery(ThreadQuerySchema, req);
    const thread = await ctx.service.thread(tenantId, threadId, {
      before: query.cursor === undefined ? null : decodeThreadCursor(query.cursor),
      limit: query.limit ?? THREAD_PAGE_DEFAULT,
      maxBytes: THREAD_PAGE_MAX_BYTES,
    });
    if (thread.runIds.length === 0 && thread.activeRunId === null)
      throw notFound(`thread ${threadId} was not found`);
    res.json({
      threadId,
      activeRunId: thread.activeRunId,
      queued: thread.queued,
      runIds: thread.runIds,
      messages: thread.messages,
      state: thread.state,
      nextCursor: thread.before === null ? null : encodeThreadCursor(thread.before),
    });
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
    res.json({ ...page, runs: await narrowRuns(ctx, req, tenantId, page.runs) });
  });

  return router;
}

/** A page cursor: the list position the page ends before, opaque to clients. */
function encodeThreadCursor(before: number): string {
  return Buffer.from(`m${String(before)}`).toString('base64url');
}

function decodeThreadCursor(cursor: string): number {
  const match = /^m([1-9][0-9]{0,14})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match?.[1])
    throw badRequest('cursor is invalid: pass the nextCursor of a previous page, unchanged', {
      param: 'cursor',
    });
  return Number(match[1]);
}

/** OpenAPI paths of threadsRouter. */
export const threadsPaths: OpenApiPaths = {
  '/v1/threads/{id}': {
    get: {
      tags: ['threads'],
      operationId: 'getThread',
      summary:
        'A page of the thread history (newest first page; older pages by nextCursor), active run, queued runs',
      parameters: [threadIdParam, ...queryParameters(ThreadQuerySchema)],
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
