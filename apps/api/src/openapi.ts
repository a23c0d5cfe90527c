import {
  AgentDescriptorSchema,
  CreateRunRequestSchema,
  CreateScheduleRequestSchema,
  ScheduleDetailSchema,
  SchedulePageSchema,
  ScheduleSchema,
  ErrorBodySchema,
  JsonValueSchema,
  MessageSchema,
  PROTOCOL_VERSION,
  RunEventSchema,
  RunSnapshotSchema,
  RunViewSchema,
  RunWebhooksResponseSchema,
  SubmitDecisionsRequestSchema,
  WebhookMessageSchema,
} from '@baton/protocol';
import { z } from 'zod';
import { AgUiRunInputSchema } from './adapters/ag-ui/input.ts';
import { ChatRequestSchema } from './adapters/ai-sdk/request.ts';
import { ListSchedulesQuerySchema } from './routes/schedules.ts';
import {
  AgentListSchema,
  CancelResponseSchema,
  DeleteThreadResponseSchema,
  CreateRunResponseSchema,
  DecisionsResponseSchema,
  EventsQuerySchema,
  HealthSchema,
  ListRunsQuerySchema,
  RunPageSchema,
  ThreadResponseSchema,
  ThreadRunsQuerySchema,
} from './schemas.ts';

/**
 * /openapi.json, generated from the zod schemas (never hand-written): request bodies from the
 * protocol package, responses from schemas.ts. JSON Schema 2020-12 is OpenAPI 3.1's dialect.
 */

type Json = Record<string, unknown>;

const REQUESTS = {
  CreateRunRequest: CreateRunRequestSchema,
  SubmitDecisionsRequest: SubmitDecisionsRequestSchema,
  AiSdkChatRequest: ChatRequestSchema,
  AgUiRunAgentInput: AgUiRunInputSchema,
  CreateScheduleRequest: CreateScheduleRequestSchema,
} as const;

const RESPONSES = {
  CreateRunResponse: CreateRunResponseSchema,
  RunSnapshot: RunSnapshotSchema,
  RunView: RunViewSchema,
  RunPage: RunPageSchema,
  RunEvent: RunEventSchema,
  DecisionsResponse: DecisionsResponseSchema,
  CancelResponse: CancelResponseSchema,
  DeleteThreadResponse: DeleteThreadResponseSchema,
  Thread: ThreadResponseSchema,
  AgentList: AgentListSchema,
  AgentDescriptor: AgentDescriptorSchema,
  ErrorBody: ErrorBodySchema,
  Health: HealthSchema,
  Schedule: ScheduleSchema,
  ScheduleDetail: ScheduleDetailSchema,
  SchedulePage: SchedulePageSchema,
  RunWebhooks: RunWebhooksResponseSchema,
  WebhookMessage: WebhookMessageSchema,
} as const;

const SHARED = { JsonValue: JsonValueSchema, Message: MessageSchema } as const;

function components(
  schemas: Record<string, z.ZodType>,
  io: 'input' | 'output',
): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries({ ...SHARED, ...schemas }))
    registry.add(schema, { id });
  const out = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const result: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(out.schemas)) {
    const { $schema: _s, $id: _i, ...rest } = schema as Json;
    result[id] = rest;
  }
  return result;
}

function queryParameters(schema: z.ZodType): Json[] {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
  }) as Json;
  const properties = (json['properties'] ?? {}) as Record<string, Json>;
  return Object.entries(properties).map(([name, prop]) => ({
    name,
    in: 'query',
    required: false,
    schema: prop,
  }));
}

const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string, description: string): Json => ({
  description,
  content: { 'application/json': { schema: ref(id) } },
});
const error = (description: string): Json => json('ErrorBody', description);

const runIdParam: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Run id',
  schema: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$' },
};
const threadIdParam: Json = { ...runIdParam, description: 'Thread id' };
const secured = [{ bearerAuth: [] }, { apiKeyHeader: [] }];

const commonErrors: Json = {
  '400': error('Malformed JSON, unknown fields or invalid values (details.issues lists each path)'),
  '401': error('Missing or invalid API key'),
  '429': error('Rate limited; see Retry-After'),
  '503': error('unavailable: Redis cannot be reached right now; retry after Retry-After'),
};

export function buildOpenApiDocument(): Json {
  const schemas = { ...components(RESPONSES, 'output'), ...components(REQUESTS, 'input') };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Baton API',
      version: `${PROTOCOL_VERSION}.0.0`,
      description:
        'Distributed runtime for AI agent runs: create runs, stream their events (SSE), answer suspended tool calls.',
    },
    servers: [{ url: '/' }],
    security: secured,
    tags: [
      { name: 'runs' },
      { name: 'threads' },
      { name: 'agents' },
      { name: 'schedules', description: 'Scheduled runs: cron (with a time zone) or intervals' },
      { name: 'protocols', description: 'Front-end protocols: AI SDK UI message stream, AG-UI' },
      { name: 'ops' },
    ],
    paths: {
      '/v1/runs': {
        post: {
          tags: ['runs'],
          operationId: 'createRun',
          summary: 'Create a run (202); honors Idempotency-Key',
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              schema: { type: 'string', maxLength: 255 },
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
            '413': error('Body or message count over the limit'),
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
            'A run whose agent tools started child runs lists them in `childRuns` (with their status), and `await` also holds the suspended calls of its unfinished descendants, each with the `runId` that holds it.',
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
      '/v1/runs/{id}/events': {
        get: {
          tags: ['runs'],
          operationId: 'streamRunEvents',
          summary: 'Server-Sent Events: replay after Last-Event-ID / after, then live',
          description:
            "Each frame: `id:` (seq), `event:` (type), `data:` (RunEvent JSON). `: ping` comments are heartbeats. 204 when nothing more will come. With `children=1` the stream also carries the events of the run's child runs (agent-as-tool; the envelope `runId` says whose) and `id:` is a composite cursor `<seq>;<child suffix>=<seq>…` to send back as Last-Event-ID; it ends when the whole tree is done (`until=suspended` is refused with it, 400).",
          parameters: [
            runIdParam,
            {
              name: 'Last-Event-ID',
              in: 'header',
              required: false,
              schema: { type: 'string', pattern: '^[0-9]+(;[A-Za-z0-9._:-]+=[0-9]+)*$' },
            },
            ...queryParameters(EventsQuerySchema),
          ],
          responses: {
            '200': {
              description: 'Event stream',
              content: {
                'text/event-stream': {
                  schema: {
                    type: 'string',
                    description: 'SSE frames; each data line is a RunEvent',
                  },
                  'x-event-schema': ref('RunEvent'),
                },
              },
            },
            '204': {
              description:
                'The run is done (or waiting, with until=suspended) and every event was already received',
            },
            ...commonErrors,
            '404': error('run_not_found'),
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
      '/v1/runs/{id}/webhooks': {
        get: {
          tags: ['runs'],
          operationId: 'getRunWebhooks',
          summary: "The run's webhook endpoints (no secrets) and delivery log, attempt by attempt",
          description:
            'Each message is POSTed with Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256>); its body is a WebhookMessage (see components). The webhook-id is the same on every retry and redelivery.',
          parameters: [runIdParam],
          responses: {
            '200': json('RunWebhooks', 'Endpoints and deliveries'),
            ...commonErrors,
            '404': error('run_not_found (also for another tenant’s run)'),
          },
        },
      },
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
      '/v1/agents': {
        get: {
          tags: ['agents'],
          operationId: 'listAgents',
          summary:
            'Agents advertised by workers, each with its live workers and whether it is available',
          responses: { '200': json('AgentList', 'Agents'), ...commonErrors },
        },
      },
      '/v1/agents/{name}': {
        get: {
          tags: ['agents'],
          operationId: 'getAgent',
          summary: 'One advertised agent',
          parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            '200': json('AgentDescriptor', 'Agent'),
            ...commonErrors,
            '404': error('not_found'),
          },
        },
      },
      '/v1/ai-sdk/chat': {
        post: {
          tags: ['protocols'],
          operationId: 'aiSdkChat',
          summary: 'AI SDK chat (DefaultChatTransport): start a run or answer the waiting one',
          description:
            'The chat id is the thread. A last user message starts a run; a last assistant message with approval-responded / output-available tool parts answers the run waiting on the thread. The client major is the x-baton-ai-sdk-major header or body aiSdkMajor (6 or 7, default 7); the agent is body agent (default: PROTOCOL_DEFAULT_AGENT).',
          parameters: [
            {
              name: 'x-baton-ai-sdk-major',
              in: 'header',
              required: false,
              schema: { type: 'string', enum: ['6', '7'] },
            },
          ],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref('AiSdkChatRequest') } },
          },
          responses: {
            '200': {
              description:
                'UI message stream (header x-vercel-ai-ui-message-stream: v1): data: <chunk JSON> frames, then data: [DONE]',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...commonErrors,
            '409': error('thread_busy, or a decision conflict'),
            '422': error('unknown_agent or payload_invalid'),
          },
        },
      },
      '/v1/ai-sdk/chat/{id}/stream': {
        get: {
          tags: ['protocols'],
          operationId: 'aiSdkResumeStream',
          summary: "Resume the chat's streaming turn (useChat resume / reconnectToStream)",
          parameters: [{ ...threadIdParam, description: 'Chat (thread) id' }],
          responses: {
            '200': {
              description: 'The turn in progress, replayed from the event log, then live',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            '204': { description: 'Nothing is streaming on this chat' },
            ...commonErrors,
          },
        },
      },
      '/v1/ag-ui': {
        post: {
          tags: ['protocols'],
          operationId: 'agUiRun',
          summary: 'AG-UI (HttpAgent): run the agent, or resume its interrupts',
          description:
            'A user message starts a run on the thread (agent: forwardedProps.agent, default PROTOCOL_DEFAULT_AGENT); resume entries answer the pending interrupts. Inputs AG-UI cannot serve are a RUN_ERROR event.',
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref('AgUiRunAgentInput') } },
          },
          responses: {
            '200': {
              description: 'AG-UI events as SSE: data: <event JSON> frames (no [DONE])',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...commonErrors,
            '409': error('thread_busy, or a decision conflict'),
            '422': error('unknown_agent or payload_invalid'),
          },
        },
      },
      ...schedulePaths(),
      '/healthz': {
        get: {
          tags: ['ops'],
          operationId: 'healthz',
          security: [],
          responses: { '200': json('Health', 'Process is up') },
        },
      },
      '/readyz': {
        get: {
          tags: ['ops'],
          operationId: 'readyz',
          security: [],
          responses: {
            '200': json('Health', 'Redis and queues usable'),
            '503': json('Health', 'Not ready'),
          },
        },
      },
      '/metrics': {
        get: {
          tags: ['ops'],
          operationId: 'metrics',
          description:
            'Needs METRICS_KEY or an admin key as a bearer token, unless METRICS_PUBLIC=true',
          responses: {
            '200': {
              description: 'Prometheus text format',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        },
      },
      '/openapi.json': {
        get: {
          tags: ['ops'],
          operationId: 'openapi',
          security: [],
          responses: {
            '200': {
              description: 'This document',
              content: { 'application/json': { schema: { type: 'object' } } },
            },
          },
        },
      },
    },
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'Authorization: Bearer <API key>',
        },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      },
    },
  };
}

/** /v1/schedules: scheduled runs. */
function schedulePaths(): Record<string, Json> {
  const idParam: Json = { ...runIdParam, description: 'Schedule id' };
  const notFound = error('not_found: no such schedule for this tenant');
  const detail = (description: string): Json => json('ScheduleDetail', description);
  return {
    '/v1/schedules': {
      post: {
        tags: ['schedules'],
        operationId: 'createSchedule',
        summary: 'Create a schedule (201); honors Idempotency-Key',
        description:
          'Exactly one of cron (5 fields, or 6 with seconds first; timezone defaults to UTC) and everyMs (at least 1000). Each firing creates a run of the agent (scheduleId on the run); with threadId, overlapping firings follow options.multitask. An invalid cron or zone is a 400 validation_failed naming the field.',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            schema: { type: 'string', maxLength: 255 },
          },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('CreateScheduleRequest') } },
        },
        responses: {
          '201': detail('Schedule created (Location: its URL)'),
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
        parameters: [idParam],
        responses: { '200': detail('Schedule'), ...commonErrors, '404': notFound },
      },
      delete: {
        tags: ['schedules'],
        operationId: 'deleteSchedule',
        summary: 'Delete a schedule (204); the runs it created stay',
        parameters: [idParam],
        responses: { '204': { description: 'Deleted' }, ...commonErrors, '404': notFound },
      },
    },
    '/v1/schedules/{id}/pause': {
      post: {
        tags: ['schedules'],
        operationId: 'pauseSchedule',
        summary: 'Stop firing (idempotent)',
        parameters: [idParam],
        responses: { '200': detail('Paused'), ...commonErrors, '404': notFound },
      },
    },
    '/v1/schedules/{id}/resume': {
      post: {
        tags: ['schedules'],
        operationId: 'resumeSchedule',
        summary: 'Fire again from now on (idempotent); firings missed while paused are skipped',
        parameters: [idParam],
        responses: {
          '200': detail('Active'),
          ...commonErrors,
          '404': notFound,
          '409': error('conflict: the schedule has completed (limit reached or endAt passed)'),
        },
      },
    },
    '/v1/schedules/{id}/runs': {
      get: {
        tags: ['schedules'],
        operationId: 'listScheduleRuns',
        summary: 'The runs the schedule created, newest first',
        parameters: [idParam, ...queryParameters(ListSchedulesQuerySchema)],
        responses: { '200': json('RunPage', 'A page of runs'), ...commonErrors, '404': notFound },
      },
    },
  };
}
