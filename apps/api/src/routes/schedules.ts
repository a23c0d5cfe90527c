import { BatonError } from '@baton/core';
import {
  CreateScheduleRequestSchema,
  SCHEDULE_RECENT_FIRINGS,
  ScheduleDetailSchema,
  ScheduleSchema,
  type Schedule,
  type ScheduleDetail,
} from '@baton/protocol';
import type { StoredSchedule } from '@baton/runtime/internal';
import { Router, type Request } from 'express';
import { z } from 'zod';
import { principalOf } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { parseBody, parseId, parseQuery } from '../validation.ts';
import { idempotentId } from '../idempotency.ts';
import {
  commonErrors,
  error,
  idempotencyKeyParam,
  json,
  queryParameters,
  ref,
  runIdParam,
  type Json,
  type OpenApiPaths,
} from '../openapi/shared.ts';

const ListSchedulesQuerySchema = z.strictObject({
  cursor: z.string().min(1).max(512).optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
});

const EmptyBodySchema = z.strictObject({}).optional();

function scheduleView(stored: StoredSchedule, nextFireAt: number | null): Schedule {
  const { record: r } = stored;
  const self = `/v1/schedules/${encodeURIComponent(r.scheduleId)}`;
  return ScheduleSchema.parse({
    scheduleId: r.scheduleId,
    ...(r.name !== undefined ? { name: r.name } : {}),
    agent: r.agent,
    ...(r.threadId !== undefined ? { threadId: r.threadId } : {}),
    input: r.input,
    ...(r.options !== undefined ? { options: r.options } : {}),
    ...(r.cron !== undefined ? { cron: r.cron, timezone: r.timezone ?? 'UTC' } : {}),
    ...(r.everyMs !== undefined ? { everyMs: r.everyMs } : {}),
    ...(r.startAt !== undefined ? { startAt: r.startAt } : {}),
    ...(r.endAt !== undefined ? { endAt: r.endAt } : {}),
    ...(r.limit !== undefined ? { limit: r.limit } : {}),
    state: r.state,
    ...(r.completedReason !== undefined ? { completedReason: r.completedReason } : {}),
    version: stored.version,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    nextFireAt,
    firings: stored.fired,
    lastFiredAt: stored.lastFiredAt,
    links: {
      self,
      runs: `${self}/runs`,
      pause: `${self}/pause`,
      resume: `${self}/resume`,
    },
  });
}

function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' ? key : undefined;
}

/** Scheduled runs: /v1/schedules (tenant-scoped; another tenant's schedule is a 404). */
export function schedulesRouter(ctx: ApiContext): Router {
  const router = Router();
  const { schedules } = ctx;

  const detail = async (stored: StoredSchedule): Promise<ScheduleDetail> => {
    const [nextFireAt, recentFirings] = await Promise.all([
      schedules.nextFireAt(stored),
      schedules.recentFirings(stored, SCHEDULE_RECENT_FIRINGS),
    ]);
    return ScheduleDetailSchema.parse({ ...scheduleView(stored, nextFireAt), recentFirings });
  };

  router.post('/schedules', async (req, res) => {
    const { tenantId } = principalOf(req);
    const messages = (req.body as { input?: { messages?: unknown } } | undefined)?.input?.messages;
    if (Array.isArray(messages) && messages.length > ctx.config.MAX_INPUT_MESSAGES)
      throw new BatonError(
        'payload_too_large',
        `at most ${ctx.config.MAX_INPUT_MESSAGES} input messages per schedule (got ${messages.length}); shorten the input`,
        { limit: ctx.config.MAX_INPUT_MESSAGES, got: messages.length },
      );
    const body = parseBody(CreateScheduleRequestSchema, req);
    const key = idempotencyKeyOf(req);
    // Under an Idempotency-Key the schedule's id derives from it: an attempt after one that
    // created the schedule and then failed answers that schedule, never creates a second one.
    const opts =
      key === undefined
        ? {}
        : { scheduleId: `sch-${idempotentId('schedule', tenantId, key, body)}` };
    const create = async (): Promise<ScheduleDetail> =>
      detail(await schedules.create(tenantId, body, opts));
    let response: ScheduleDetail;
    if (key === undefined) response = await create();
    else {
      const result = await ctx.idempotency.run(tenantId, 'create-schedule', key, body, create);
      response = result.response;
      if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
    }
    res.status(201).location(response.links.self).json(response);
  });

  router.get('/schedules', async (req, res) => {
    const { tenantId } = principalOf(req);
    const query = parseQuery(ListSchedulesQuerySchema, req);
    const page = await schedules.list(tenantId, query.limit ?? 20, query.cursor ?? null);
    const views = await Promise.all(
      page.schedules.map(async (s) => scheduleView(s, await schedules.nextFireAt(s))),
    );
    res.json({ schedules: views, nextCursor: page.nextCursor });
  });

  router.get('/schedules/:id', async (req, res) => {
    const { tenantId } = principalOf(req);
    const id = parseId(req.params['id'], 'schedule id');
    res.json(await detail(await schedules.get(tenantId, id)));
  });

  router.get('/schedules/:id/runs', async (req, res) => {
    const { tenantId } = principalOf(req);
    const id = parseId(req.params['id'], 'schedule id');
    const query = parseQuery(ListSchedulesQuerySchema, req);
    res.json(await schedules.runs(tenantId, id, query.limit ?? 20, query.cursor ?? null));
  });

  router.post('/schedules/:id/pause', async (req, res) => {
    const { tenantId } = principalOf(req);
    const id = parseId(req.params['id'], 'schedule id');
    if (req.body !== undefined) parseBody(EmptyBodySchema, req);
    res.json(await detail(await schedules.pause(tenantId, id)));
  });

  router.post('/schedules/:id/resume', async (req, res) => {
    const { tenantId } = principalOf(req);
    const id = parseId(req.params['id'], 'schedule id');
    if (req.body !== undefined) parseBody(EmptyBodySchema, req);
    res.json(await detail(await schedules.resume(tenantId, id)));
  });

  router.delete('/schedules/:id', async (req, res) => {
    const { tenantId } = principalOf(req);
    const id = parseId(req.params['id'], 'schedule id');
    await schedules.delete(tenantId, id);
    res.status(204).end();
  });

  return router;
}

const scheduleIdParam: Json = { ...runIdParam, description: 'Schedule id' };
const scheduleNotFound = error('not_found: no such schedule for this tenant');
const scheduleDetail = (description: string): Json => json('ScheduleDetail', description);

/** OpenAPI paths of schedulesRouter. */
export const schedulesPaths: OpenApiPaths = {
  '/v1/schedules': {
    post: {
      tags: ['schedules'],
      operationId: 'createSchedule',
      summary: 'Create a schedule (201); honors Idempotency-Key',
      description:
        'Exactly one of cron (5 fields, or 6 with seconds first; timezone defaults to UTC) and everyMs (at least 1000). Each firing creates a run of the agent (scheduleId on the run); with threadId, overlapping firings follow options.multitask. An invalid cron or zone is a 400 validation_failed naming the field.',
      parameters: [idempotencyKeyParam],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('CreateScheduleRequest') } },
      },
      responses: {
        '201': scheduleDetail('Schedule created (Location: its URL)'),
        ...commonErrors,
        '409': error('idempotency_conflict'),
        '413': error('Body or message count over the limit'),
        '422': error('unknown_agent'),
      },
    },
    get: {
      tags: ['schedules'],
      operationId: 'listSchedules',
      summary: "The tenant's schedules, newest first (cursor pagination)",
      parameters: queryParameters(ListSchedulesQuerySchema),
      responses: { '200': json('SchedulePage', 'A page of schedules'), ...commonErrors },
    },
  },
  '/v1/schedules/{id}': {
    get: {
      tags: ['schedules'],
      operationId: 'getSchedule',
      summary: 'A schedule with its next firing time and its latest firings',
      parameters: [scheduleIdParam],
      responses: { '200': scheduleDetail('Schedule'), ...commonErrors, '404': scheduleNotFound },
    },
    delete: {
      tags: ['schedules'],
      operationId: 'deleteSchedule',
      summary: 'Delete a schedule (204); the runs it created stay',
      parameters: [scheduleIdParam],
      responses: { '204': { description: 'Deleted' }, ...commonErrors, '404': scheduleNotFound },
    },
  },
  '/v1/schedules/{id}/pause': {
    post: {
      tags: ['schedules'],
      operationId: 'pauseSchedule',
      summary: 'Stop firing (idempotent)',
      parameters: [scheduleIdParam],
      responses: { '200': scheduleDetail('Paused'), ...commonErrors, '404': scheduleNotFound },
    },
  },
  '/v1/schedules/{id}/resume': {
    post: {
      tags: ['schedules'],
      operationId: 'resumeSchedule',
      summary: 'Fire again from now on (idempotent); firings missed while paused are skipped',
      parameters: [scheduleIdParam],
      responses: {
        '200': scheduleDetail('Active'),
        ...commonErrors,
        '404': scheduleNotFound,
        '409': error('conflict: the schedule has completed (limit reached or endAt passed)'),
      },
    },
  },
  '/v1/schedules/{id}/runs': {
    get: {
      tags: ['schedules'],
      operationId: 'listScheduleRuns',
      summary: 'The runs the schedule created, newest first',
      parameters: [scheduleIdParam, ...queryParameters(ListSchedulesQuerySchema)],
      responses: {
        '200': json('RunPage', 'A page of runs'),
        ...commonErrors,
        '404': scheduleNotFound,
      },
    },
  },
};
