import { BatonError, foldSnapshot } from '@baton/core';
import {
  CreateRunRequestSchema,
  BulkReplayRequestSchema,
  DEFAULT_PRIORITY,
  ForkRunRequestSchema,
  SubmitDecisionsRequestSchema,
  type Checkpoint,
  isBatonError,
  type RunParent,
  type RunSnapshot,
  type RunView,
} from '@baton/protocol';
import { Router, type Request } from 'express';
import { z } from 'zod';
import { principalOf } from '../auth.ts';
import { OWNER_METADATA, withOwner } from '../authorization.ts';
import { narrowRuns } from '../authz/authorize-request.ts';
import { publicAccessToken } from '../run-tokens.ts';
import type { ApiContext } from '../context.ts';
import { RunNotFoundError } from '@baton/runtime';
import { SCHEDULE_ID_METADATA, encodeCursor, fairnessKeyOf } from '@baton/runtime/internal';
import {
  CreateRunResponseSchema,
  ListRunsQuerySchema,
  type CreateRunResponse,
  type RunLinks,
} from '../schemas.ts';
import { parseBody, parseId, parseQuery } from '../validation.ts';
import { idempotentRunIds } from '../idempotency.ts';
import { runTreeView } from '../child-tree.ts';
import {
  commonErrors,
  error,
  idempotencyKeyParam,
  json,
  queryParameters,
  ref,
  runIdParam,
  type OpenApiPaths,
} from '../openapi/shared.ts';

function runLinks(runId: string, threadId: string): RunLinks {
  const self = `/v1/runs/${encodeURIComponent(runId)}`;
  return {
    self,
    events: `${self}/events`,
    decisions: `${self}/decisions`,
    cancel: `${self}/cancel`,
    thread: `/v1/threads/${encodeURIComponent(threadId)}`,
  };
}

/** Counts checked before the schema so that over-limit requests get 413 whatever else is wrong. */
function checkCount(value: unknown, max: number, what: string): void {
  if (Array.isArray(value) && value.length > max)
    throw new BatonError(
      'payload_too_large',
      `at most ${max} ${what} per request (got ${value.length}); split the request`,
      { limit: max, got: value.length },
    );
}

const CancelBodySchema = z.strictObject({}).optional();

/**
 * Shows the waitpoints made through the API (POST …/calls/:id/waitpoint) as the waitFor of
 * awaited calls whose ticket names no wait: they change no checkpoint, so no event carries them.
 */
async function withApiWaitpoints(
  ctx: ApiContext,
  runId: string,
  snapshot: RunSnapshot,
): Promise<RunSnapshot> {
  const awaited = snapshot.await;
  if (!awaited || awaited.calls.every((c) => c.waitFor !== undefined)) return snapshot;
  const made = await ctx.waits.apiWaitpoints(runId);
  if (made.size === 0) return snapshot;
  const calls = awaited.calls.map((c) => {
    const waitFor = c.waitFor ?? made.get(c.toolCallId);
    return waitFor === undefined ? c : { ...c, waitFor };
  });
  return { ...snapshot, await: { ...awaited, calls } };
}

async function loadSnapshot(
  ctx: ApiContext,
  tenantId: string,
  runId: string,
): Promise<{
  snapshot: RunSnapshot;
  metadata: Record<string, string>;
  parent: RunParent | undefined;
  identity: Checkpoint['identity'];
  origin: Checkpoint['origin'];
}> {
  const { checkpoint, events } = await ctx.service.loadWithEvents(tenantId, runId);
  if (events.length === 0) throw new RunNotFoundError(runId);
  return {
    snapshot: await withApiWaitpoints(ctx, runId, foldSnapshot(events)),
    metadata: checkpoint.metadata,
    parent: checkpoint.identity.parent,
    identity: checkpoint.identity,
    origin: checkpoint.origin,
  };
}

/** The snapshot, and whether the run waits for a worker of its agent (from heartbeats). */
async function runView(ctx: ApiContext, tenantId: string, runId: string): Promise<RunView> {
  const { snapshot, metadata, parent, identity, origin } = await loadSnapshot(ctx, tenantId, runId);
  const needsWorker = snapshot.status === 'created' || snapshot.status === 'running';
  const { agentVersion } = identity;
  // Parked for want of a worker of its version: no job, no slot (version_unavailable). A run
  // resumed by a decision is parked before any worker applied it (its log still says waiting).
  const parked =
    snapshot.status !== 'done' && agentVersion !== undefined
      ? await ctx.service.versions.parked(identity.agent, agentVersion, runId)
      : null;
  const queued =
    parked !== null
      ? { reason: 'version_unavailable' as const, position: 1, backlog: parked, inProgress: 0 }
      : snapshot.status === 'done'
        ? null
        : await ctx.service.queuedInfo(identity);
  const waitingForWorker =
    parked !== null ||
    (needsWorker &&
      (agentVersion === undefined
        ? !(await ctx.service.catalog.available(snapshot.agent))
        : !(await ctx.service.versions.isLive(identity.agent, agentVersion))));
  const scheduleId = metadata[SCHEDULE_ID_METADATA];
  const owner = metadata[OWNER_METADATA];
  const tree = await runTreeView(ctx, tenantId, snapshot);
  const view: RunView = {
    ...snapshot,
    childRuns: undefined,
    ...tree,
    waitingForWorker,
    ...(scheduleId !== undefined ? { scheduleId } : {}),
    ...(owner !== undefined ? { owner } : {}),
    ...(parent !== undefined ? { parent } : {}),
    priority: identity.priority ?? DEFAULT_PRIORITY,
    fairnessKey: fairnessKeyOf(identity),
    ...(agentVersion === undefined ? {} : { agentVersion }),
    ...(queued ? { queued } : {}),
    ...(origin ? { origin } : {}),
  };
  if (view.childRuns === undefined) delete view.childRuns;
  return view;
}

type ListRunsQuery = Parameters<ApiContext['service']['listRuns']>[0];
type RunPage = Awaited<ReturnType<ApiContext['service']['listRuns']>>;

/** Runs GET /v1/runs?admission=queued reads per list page, and pages at most per request. */
const QUEUED_SCAN_BATCH = 100;
const QUEUED_SCAN_PAGES = 50;

/**
 * The runs waiting for a slot, newest first, as a page of the ordinary list: the tenant's parked
 * runs are known first (its admission state, bounded by its runs in progress and waiting: none
 * parked answers at once), then the list is read in batches and filtered by them. Without a
 * cursor it stops once every parked run was seen; a page may hold fewer runs than `limit` with a
 * cursor when the scan stopped at QUEUED_SCAN_PAGES batches.
 */
async function listQueued(
  ctx: ApiContext,
  filters: Omit<ListRunsQuery, 'cursor' | 'limit'>,
  cursor: string | null,
  limit: number,
): Promise<RunPage> {
  const parked = await ctx.service.parkedRuns(filters.tenantId);
  if (parked.size === 0) return { runs: [], nextCursor: null };
  const runs: RunPage['runs'] = [];
  let next = cursor;
  for (let pages = 0; pages < QUEUED_SCAN_PAGES; pages += 1) {
    const page = await ctx.service.listRuns({ ...filters, cursor: next, limit: QUEUED_SCAN_BATCH });
    for (const run of page.runs) if (parked.has(run.runId)) runs.push(run);
    next = page.nextCursor;
    if (runs.length > limit) {
      const last = runs[limit - 1]!;
      return { runs: runs.slice(0, limit), nextCursor: encodeCursor(last.createdAt, last.runId) };
    }
    if (next === null || (cursor === null && runs.length >= parked.size)) break;
  }
  const done = next === null || (cursor === null && runs.length >= parked.size);
  return { runs, nextCursor: done ? null : next };
}

function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' ? key : undefined;
}

export function runsRouter(ctx: ApiContext): Router {
  const router = Router();

  router.post('/runs', async (req, res) => {
    const principal = principalOf(req);
    const { tenantId } = principal;
    const raw = req.body as { input?: { messages?: unknown } } | undefined;
    checkCount(raw?.input?.messages, ctx.config.MAX_INPUT_MESSAGES, 'input messages');
    const parsed = parseBody(CreateRunRequestSchema, req);
    const body = withOwner(parsed, principal);
    const key = idempotencyKeyOf(req);
    // Under an Idempotency-Key the run's id derives from it: an attempt after one that created
    // the run and then failed answers that run (and starts it), never creates a second one.
    const opts =
      key === undefined
        ? {}
        : { ...idempotentRunIds(tenantId, key, body), onExisting: 'answer' as const };
    const create = async (): Promise<CreateRunResponse> => {
      const created = await ctx.service.createRun(tenantId, body, opts);
      ctx.metrics.runsCreated.inc({ agent: body.agent, version: created.agentVersion ?? '' });
      return CreateRunResponseSchema.parse({
        ...created,
        links: runLinks(created.runId, created.threadId),
      });
    };
    let response: CreateRunResponse;
    if (key === undefined) response = await create();
    else {
      const result = await ctx.idempotency.run(tenantId, 'create-run', key, body, create);
      response = result.response;
      if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
    }
    const token = await publicAccessToken(
      ctx,
      req,
      principal,
      response,
      parsed.threadId !== undefined,
    );
    if (token !== undefined) response = { ...response, publicAccessToken: token };
    res.status(202).location(response.links.self).json(response);
  });

  router.get('/runs', async (req, res) => {
    const principal = principalOf(req);
    const query = parseQuery(ListRunsQuerySchema, req);
    let tenantId = principal.tenantId;
    if (query.tenant !== undefined && query.tenant !== principal.tenantId) {
      if (!principal.admin)
        throw new BatonError('forbidden', "listing another tenant's runs needs an admin key");
      tenantId = query.tenant;
    }
    const filters = {
      tenantId,
      ...(query.status ? { status: query.status } : {}),
      ...(query.agent ? { agent: query.agent } : {}),
      ...(query.thread ? { threadId: query.thread } : {}),
      ...(query.fairnessKey ? { fairnessKey: query.fairnessKey } : {}),
      ...(query.agentVersion ? { agentVersion: query.agentVersion } : {}),
    };
    const limit = query.limit ?? 20;
    const page =
      query.admission === 'queued'
        ? await listQueued(ctx, filters, query.cursor ?? null, limit)
        : await ctx.service.listRuns({ ...filters, cursor: query.cursor ?? null, limit });
    const admission = await ctx.service.admissionOf(
      tenantId,
      page.runs.map((r) => r.runId),
    );
    const runs = await narrowRuns(ctx, req, tenantId, page.runs);
    res.json({
      runs: runs.map((r) => ({ ...r, ...admission.get(r.runId) })),
      nextCursor: page.nextCursor,
    });
  });

  router.get('/runs/:id', async (req, res) => {
    const principal = principalOf(req);
    const { tenantId } = principal;
    const runId = parseId(req.params['id'], 'run id');
    res.json(await runView(ctx, tenantId, runId));
  });

  router.post('/runs/:id/decisions', async (req, res) => {
    const principal = principalOf(req);
    const { tenantId } = principal;
    const runId = parseId(req.params['id'], 'run id');
    checkCount(
      (req.body as { decisions?: unknown } | undefined)?.decisions,
      ctx.config.MAX_DECISIONS,
      'decisions',
    );
    const body = parseBody(SubmitDecisionsRequestSchema, req);
    // Decisions for child runs' calls may be sent to an ancestor (agent-as-tool): the service
    // routes them and says where they went (`routed`).
    const result = await ctx.service.submitDecisions(tenantId, runId, body.decisions);
    res.status(202).json({ runId, ...result });
  });

  router.post('/runs/:id/cancel', async (req, res) => {
    const principal = principalOf(req);
    const { tenantId } = principal;
    const runId = parseId(req.params['id'], 'run id');
    if (req.body !== undefined) parseBody(CancelBodySchema, req);
    // Idempotent: a run that finished meanwhile (run_done from the commit) is simply done.
    const result = await ctx.service.cancel(tenantId, runId).catch((error: unknown) => {
      if (isBatonError(error) && error.code === 'run_done') return { status: 'done' as const };
      throw error;
    });
    res.status(202).json({ runId, status: result.status });
  });

  /**
   * A new run from the original's state after event atSeq, on a new thread branch; the
   * original is not touched (docs/http-api.md "Fork and replay").
   */
  router.post('/runs/:id/fork', async (req, res) => {
    const { tenantId } = principalOf(req);
    const runId = parseId(req.params['id'], 'run id');
    const body = parseBody(ForkRunRequestSchema, req);
    const forked = await ctx.service.forkRun(tenantId, runId, body);
    res.status(202).json({ ...forked, links: runLinks(forked.runId, forked.threadId) });
  });

  /** Replays the failed or cancelled runs a filter selects, in batches; progress at /v1/replays/:id. */
  router.post('/runs/replay', async (req, res) => {
    const { tenantId } = principalOf(req);
    const body = parseBody(BulkReplayRequestSchema, req);
    const status = await ctx.service.replayRuns(tenantId, body.filter);
    res
      .status(202)
      .location(`/v1/replays/${encodeURIComponent(status.replayId)}`)
      .json(status);
  });

  router.get('/replays/:id', async (req, res) => {
    const { tenantId } = principalOf(req);
    const replayId = parseId(req.params['id'], 'replay id');
    res.json(await ctx.service.bulkReplay(tenantId, replayId));
  });

  /** A failed or cancelled run again, as a new run from its last committed step. */
  router.post('/runs/:id/replay', async (req, res) => {
    const { tenantId } = principalOf(req);
    const runId = parseId(req.params['id'], 'run id');
    if (req.body !== undefined) parseBody(CancelBodySchema, req);
    const replayed = await ctx.service.replayRun(tenantId, runId);
    res.status(202).json({ ...replayed, links: runLinks(replayed.runId, replayed.threadId) });
  });

  /** Deletes a finished run now instead of at the end of its retention (409 while it runs). */
  router.delete('/runs/:id', async (req, res) => {
    const principal = principalOf(req);
    const { tenantId } = principal;
    const runId = parseId(req.params['id'], 'run id');
    await ctx.service.deleteRun(tenantId, runId);
    res.status(204).end();
  });

  return router;
}

/** OpenAPI paths of runsRouter. */
export const runsPaths: OpenApiPaths = {
  '/v1/runs': {
    post: {
      tags: ['runs'],
      operationId: 'createRun',
      summary: 'Create a run (202); honors Idempotency-Key',
      parameters: [
        idempotencyKeyParam,
        {
          name: 'publicAccessToken',
          in: 'query',
          required: false,
          description:
            'false: no publicAccessToken in the answer (default: a token that reads this run and decides its calls)',
          schema: { type: 'string', enum: ['true', 'false'] },
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('CreateRunRequest') } },
      },
      responses: {
        '202': json('CreateRunResponse', 'Run accepted'),
        ...commonErrors,
        '400': error(
          'validation_failed, bad_request, or webhook_target_refused (webhook.url resolves to a loopback, private, link-local … address, or does not resolve)',
        ),
        '409': error('thread_busy or idempotency_conflict'),
        '413': error(
          'payload_too_large (body or message count over the limit) or thread_too_large (the thread with this input would pass THREAD_MAX_MESSAGES / THREAD_MAX_BYTES)',
        ),
        '422': error('unknown_agent'),
      },
    },
    get: {
      tags: ['runs'],
      operationId: 'listRuns',
      summary: "List the tenant's runs, newest first (cursor pagination)",
      parameters: queryParameters(ListRunsQuerySchema),
      responses: {
        '200': json('RunPage', 'A page of runs'),
        ...commonErrors,
        '403': error('tenant= needs an admin key'),
      },
    },
  },
  '/v1/runs/{id}': {
    get: {
      tags: ['runs'],
      operationId: 'getRun',
      summary:
        'The run snapshot derived from its event log, and whether it waits for a worker of its agent',
      description:
        'A run whose agent tools started child runs lists them in `childRuns` (with their status), and `await` also holds the suspended calls of its unfinished descendants, each with the `runId` that holds it. A child run names its parent run and call in `parent`.',
      parameters: [runIdParam],
      responses: {
        '200': json('RunView', 'Snapshot'),
        ...commonErrors,
        '404': error('run_not_found'),
      },
    },
    delete: {
      tags: ['runs'],
      operationId: 'deleteRun',
      summary: 'Delete a finished run and its events now (204)',
      parameters: [runIdParam],
      responses: {
        '204': { description: 'Deleted' },
        ...commonErrors,
        '404': error('run_not_found'),
        '409': error('run_active: the run has not finished; cancel it first'),
      },
    },
  },
  '/v1/runs/{id}/decisions': {
    post: {
      tags: ['runs'],
      operationId: 'submitDecisions',
      summary: 'Answer suspended tool calls (202)',
      description:
        "A decision for a descendant run's call (agent-as-tool) may be sent to an ancestor: it is routed to the run named by its `runId`, else to the descendant whose call with that id is suspended; `routed` lists what each descendant accepted.",
      parameters: [runIdParam],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('SubmitDecisionsRequest') } },
      },
      responses: {
        '202': json('DecisionsResponse', 'Decisions stored'),
        ...commonErrors,
        '404': error('run_not_found'),
        '409': error(
          'run_done, run_cancelled, call_not_suspended, call_unknown or decision_conflict',
        ),
        '413': error('Too many decisions'),
        '422': error("payload_invalid: payload does not match the ticket's response schema"),
      },
    },
  },
  '/v1/runs/{id}/cancel': {
    post: {
      tags: ['runs'],
      operationId: 'cancelRun',
      summary: 'Cancel a run (202, idempotent)',
      parameters: [runIdParam],
      responses: {
        '202': json('CancelResponse', 'Cancellation requested'),
        ...commonErrors,
        '404': error('run_not_found'),
      },
    },
  },
  '/v1/runs/{id}/fork': {
    post: {
      tags: ['runs'],
      operationId: 'forkRun',
      summary:
        "Fork a run after one of its events (202): a new run on a new thread branch whose state is the original's after atSeq",
      description:
        "The fork's log opens with the original's events 1…atSeq (same bodies), so its state before atSeq is the original's; no tool call whose result is in that prefix runs again, calls pending or suspended at atSeq continue (a suspended call waits for a decision to the fork). `input` adds user messages, at a step boundary or after the run's end only. The original is not changed.",
      parameters: [runIdParam],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('ForkRunRequest') } },
      },
      responses: {
        '202': json('ForkRunResponse', 'Fork created'),
        ...commonErrors,
        '404': error('run_not_found'),
        '422': error(
          'fork_point_invalid (atSeq outside the log, or input where the run is inside a step or waits), or unknown_agent',
        ),
      },
    },
  },
  '/v1/runs/replay': {
    post: {
      tags: ['runs'],
      operationId: 'replayRuns',
      summary:
        'Replay the failed or cancelled runs a filter selects (202): a bulk operation whose progress GET /v1/replays/{id} shows',
      description:
        "The filter (agent, status failed/cancelled, createdAfter/createdBefore, agentVersion, limit) is applied when the request arrives; the selected runs are then replayed in batches, each as POST /v1/runs/{id}/replay would. A replay's ids derive from the operation and the run, so a batch handled twice replays nothing twice.",
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('BulkReplayRequest') } },
      },
      responses: {
        '202': json('BulkReplayStatus', 'Bulk replay started'),
        ...commonErrors,
      },
    },
  },
  '/v1/replays/{id}': {
    get: {
      tags: ['runs'],
      operationId: 'getBulkReplay',
      summary:
        "A bulk replay's progress: total, processed, replayed, skipped, failed, and each original's replay",
      parameters: [
        {
          name: 'id',
          in: 'path',
          required: true,
          schema: { type: 'string' },
          description: 'replayId',
        },
      ],
      responses: {
        '200': json('BulkReplayStatus', 'Progress'),
        ...commonErrors,
        '404': error('not_found'),
      },
    },
  },
  '/v1/runs/{id}/replay': {
    post: {
      tags: ['runs'],
      operationId: 'replayRun',
      summary:
        'Replay a failed or cancelled run (202): a new run from its last finished step (origin.kind "replay")',
      parameters: [runIdParam],
      responses: {
        '202': json('ForkRunResponse', 'Replay created'),
        ...commonErrors,
        '404': error('run_not_found'),
        '409': error('run_not_replayable (the run did not fail and was not cancelled)'),
      },
    },
  },
};
