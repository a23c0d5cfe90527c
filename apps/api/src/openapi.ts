import {
  AgentCurrentVersionSchema,
  AgentDescriptorSchema,
  ApiKeyListSchema,
  CreateApiKeyRequestSchema,
  CreatedApiKeySchema,
  RotateApiKeyRequestSchema,
  PromoteAgentVersionRequestSchema,
  CreateRunRequestSchema,
  BulkReplayRequestSchema,
  BulkReplayStatusSchema,
  ForkRunRequestSchema,
  ForkRunResponseSchema,
  CreateScheduleRequestSchema,
  ScheduleDetailSchema,
  SchedulePageSchema,
  ScheduleSchema,
  ErrorBodySchema,
  PROTOCOL_VERSION,
  RunEventSchema,
  RunSnapshotSchema,
  RunViewSchema,
  RunWebhooksResponseSchema,
  SubmitDecisionsRequestSchema,
  WebhookMessageSchema,
  CreateWaitpointRequestSchema,
  SendEventRequestSchema,
  SendEventResponseSchema,
  WaitpointCreatedSchema,
  WaitpointOutcomeSchema,
} from '@baton/protocol';
import { AgUiRunInputSchema } from './adapters/ag-ui/input.ts';
import { agUiPaths } from './adapters/ag-ui/route.ts';
import { ChatRequestSchema } from './adapters/ai-sdk/request.ts';
import { aiSdkPaths } from './adapters/ai-sdk/route.ts';
import { components, secured, type Json } from './openapi/shared.ts';
import { adminKeysPaths } from './routes/admin-keys.ts';
import { agentsPaths } from './routes/agents.ts';
import { eventsPaths } from './routes/events.ts';
import { opsPaths } from './routes/ops-paths.ts';
import { runsPaths } from './routes/runs.ts';
import { schedulesPaths } from './routes/schedules.ts';
import { threadsPaths } from './routes/threads.ts';
import { webhooksPaths } from './routes/webhooks.ts';
import { waitsPaths } from './routes/waits.ts';
import {
  AgentListSchema,
  CancelResponseSchema,
  DeleteThreadResponseSchema,
  CreateRunResponseSchema,
  DecisionsResponseSchema,
  HealthSchema,
  RunPageSchema,
  ThreadResponseSchema,
} from './schemas.ts';

/**
 * /openapi.json, generated from the zod schemas (never hand-written): request bodies from the
 * protocol package, responses from schemas.ts. JSON Schema 2020-12 is OpenAPI 3.1's dialect.
 * Each router describes its own paths beside it (`runsPaths` in routes/runs.ts, …; helpers in
 * openapi/shared.ts); this module assembles info, components and their union.
 */

const REQUESTS = {
  CreateRunRequest: CreateRunRequestSchema,
  SubmitDecisionsRequest: SubmitDecisionsRequestSchema,
  AiSdkChatRequest: ChatRequestSchema,
  AgUiRunAgentInput: AgUiRunInputSchema,
  CreateScheduleRequest: CreateScheduleRequestSchema,
  ForkRunRequest: ForkRunRequestSchema,
  BulkReplayRequest: BulkReplayRequestSchema,
  CreateWaitpointRequest: CreateWaitpointRequestSchema,
  SendEventRequest: SendEventRequestSchema,
  CreateApiKeyRequest: CreateApiKeyRequestSchema,
  RotateApiKeyRequest: RotateApiKeyRequestSchema,
  PromoteAgentVersionRequest: PromoteAgentVersionRequestSchema,
} as const;

const RESPONSES = {
  CreateRunResponse: CreateRunResponseSchema,
  RunSnapshot: RunSnapshotSchema,
  RunView: RunViewSchema,
  RunPage: RunPageSchema,
  RunEvent: RunEventSchema,
  DecisionsResponse: DecisionsResponseSchema,
  CancelResponse: CancelResponseSchema,
  ForkRunResponse: ForkRunResponseSchema,
  BulkReplayStatus: BulkReplayStatusSchema,
  DeleteThreadResponse: DeleteThreadResponseSchema,
  Thread: ThreadResponseSchema,
  AgentList: AgentListSchema,
  AgentDescriptor: AgentDescriptorSchema,
  AgentCurrentVersion: AgentCurrentVersionSchema,
  ErrorBody: ErrorBodySchema,
  Health: HealthSchema,
  Schedule: ScheduleSchema,
  ScheduleDetail: ScheduleDetailSchema,
  SchedulePage: SchedulePageSchema,
  RunWebhooks: RunWebhooksResponseSchema,
  WebhookMessage: WebhookMessageSchema,
  WaitpointCreated: WaitpointCreatedSchema,
  WaitpointOutcome: WaitpointOutcomeSchema,
  SendEventResponse: SendEventResponseSchema,
  CreatedApiKey: CreatedApiKeySchema,
  ApiKeyList: ApiKeyListSchema,
} as const;

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
      { name: 'waits', description: 'Waitpoint URLs and events that complete waiting calls' },
      { name: 'ops' },
      { name: 'admin', description: 'Admin keys only: tenant API keys managed at run time' },
    ],
    paths: {
      ...runsPaths,
      ...eventsPaths,
      ...webhooksPaths,
      ...threadsPaths,
      ...agentsPaths,
      ...aiSdkPaths,
      ...agUiPaths,
      ...schedulesPaths,
      ...waitsPaths,
      ...opsPaths,
      ...adminKeysPaths,
    },
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            "Authorization: Bearer <API key>, or a JWT of the tenant's identity provider (IDP_TENANTS)",
        },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      },
    },
  };
}
