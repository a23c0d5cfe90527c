/**
 * `@baton/protocol`'s public surface, listed name by name (knip fails the lint on a name nothing
 * outside the package imports unless it says @public): the wire's zod schemas and types, the
 * error codes and BatonError, and the facts both sides of the wire share.
 */
export {
  type Checkpoint,
  CHECKPOINT_VERSION,
  CheckpointSchema,
  type RunIdentity,
  type StateScopes,
} from './checkpoint.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { RunIdentitySchema, StateScopesSchema } from './checkpoint.ts';
export {
  childRunIdFor,
  type ChildRunRef,
  type ChildRunView,
  type ChildThreadMode,
  MAX_CHILD_DEPTH,
  type RunParent,
} from './child-runs.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  type ChildRunEnd,
  ChildRunEndSchema,
  type ChildRunLink,
  ChildRunLinkSchema,
  ChildRunRefSchema,
  ChildRunViewSchema,
  ChildThreadModeSchema,
  RunParentSchema,
} from './child-runs.ts';
export {
  compileContentPattern,
  contentMatches,
  MAX_CONTENT_MATCH_TEXT,
  MAX_CONTENT_PATTERN_LENGTH,
} from './content-pattern.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export type { ContentPattern } from './content-pattern.ts';
export {
  deadlineDecisionId,
  type DeadlineOutcome,
  type DeadlinePolicy,
  durationMs,
  type FinalDeadlineOutcome,
} from './deadlines.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  type Duration,
  MAX_DURATION_MS,
  type TicketDeadline,
  DeadlineOutcomeSchema,
  DeadlinePolicySchema,
  DurationSchema,
  FinalDeadlineOutcomeSchema,
  TicketDeadlineSchema,
} from './deadlines.ts';
export {
  type Decision,
  type DecisionInput,
  MAX_DECISIONS_PER_REQUEST,
  SubmitDecisionsRequestSchema,
} from './decisions.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  type DecisionAction,
  DecisionActionSchema,
  DecisionInputSchema,
  DecisionSchema,
  type SubmitDecisionsRequest,
} from './decisions.ts';
export {
  type CheckpointTrigger,
  type DecisionReplayPolicy,
  DecisionReplayPolicySchema,
  type ExecutionMode,
  ExecutionModeSchema,
  type MultitaskStrategy,
  type Phase,
  type ResumeMode,
  ResumeModeSchema,
  type RunStatus,
  RunStatusSchema,
  type ToolCallStatus,
} from './enums.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  CheckpointTriggerSchema,
  MultitaskStrategySchema,
  PhaseSchema,
  ToolCallStatusSchema,
} from './enums.ts';
export { type ErrorBody, ErrorBodySchema, type ErrorCode, ErrorCodeSchema } from './errors.ts';
export { BatonError, type BatonErrorCode, isBatonError, isPublicErrorCode } from './baton-error.ts';
export type {
  AgentConfigErrorCode,
  ClientErrorCode,
  InternalErrorCode,
} from './internal-error-codes.ts';
export {
  type EventBody,
  type EventEnvelope,
  type EventOf,
  type RunEvent,
  RunEventSchema,
} from './events.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { EventBodySchema, EventEnvelopeSchema, type EventType } from './events.ts';
export {
  DEFAULT_PRIORITY,
  FairnessKeySchema,
  type QueuedInfo,
  type QueuedReason,
} from './fairness.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { QueuedInfoSchema, QueuedReasonSchema, RunPrioritySchema } from './fairness.ts';
export { FORMATS, type FormatKind, readFormat } from './formats.ts';
export {
  JOB_PAYLOAD_VERSION,
  type StepJob,
  StepJobSchema,
  type ToolJob,
  ToolJobSchema,
} from './jobs.ts';
export { type JsonObject, type JsonValue, JsonValueSchema } from './json.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { JsonObjectSchema } from './json.ts';
export { jsonDepth, MAX_JSON_DEPTH } from './json-depth.ts';
export {
  type InputMessage,
  type Message,
  MessageSchema,
  type ToolCallRef,
  type ToolMessage,
} from './messages.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  type AssistantMessage,
  AssistantMessageSchema,
  InputMessageSchema,
  type SystemMessage,
  SystemMessageSchema,
  ToolCallRefSchema,
  ToolMessageSchema,
  type UserMessage,
  UserMessageSchema,
} from './messages.ts';
export {
  type CreateRunRequest,
  CreateRunRequestSchema,
  IdSchema,
  MAX_INPUT_MESSAGES,
  type RunOptions,
} from './run-request.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { RunOptionsSchema } from './run-request.ts';
export {
  type StopCondition,
  StopConditionSchema,
  StopConditionsSchema,
} from './stop-conditions.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export type { StopConditionType } from './stop-conditions.ts';
export type { TerminationReason } from './termination.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { type TerminationKind, TerminationReasonSchema } from './termination.ts';
export {
  type StatePatch,
  type SuspendReason,
  type SuspendTicket,
  type ToolCallState,
  type ToolDescriptor,
  type ToolExecutionResult,
  ToolExecutionResultSchema,
  type ToolOutcome,
  type ToolResult,
} from './tools.ts';
export {
  type DecisionSource,
  MAX_EVENT_WAIT_MS,
  type SendEventRequest,
  SendEventRequestSchema,
  type SendEventResponse,
  CreateWaitpointRequestSchema,
  type WaitpointCreated,
  type WaitpointOutcome,
} from './waits.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  type CreateWaitpointRequest,
  DecisionSourceSchema,
  SendEventResponseSchema,
  type WaitFor,
  WaitForSchema,
  WaitpointCreatedSchema,
  WaitpointOutcomeSchema,
} from './waits.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  StatePatchSchema,
  SuspendReasonSchema,
  SuspendTicketSchema,
  isSleepTicket,
  ToolCallStateSchema,
  ToolDescriptorSchema,
  ToolOutcomeSchema,
  ToolResultSchema,
} from './tools.ts';
export { addUsage, type Usage, ZERO_USAGE } from './usage.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { UsageSchema } from './usage.ts';

/** Wire version of everything in this package. */
export const PROTOCOL_VERSION = 1;
export {
  type AwaitedToolCall,
  type AwaitSnapshot,
  type RunSnapshot,
  RunSnapshotSchema,
  type RunView,
  RunViewSchema,
  type ToolCallSnapshot,
} from './snapshot.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  type AppliedDecision,
  AppliedDecisionSchema,
  AwaitedToolCallSchema,
  AwaitSnapshotSchema,
  type StreamingMessage,
  StreamingMessageSchema,
  ToolCallSnapshotSchema,
} from './snapshot.ts';
export {
  type AgentAdvert,
  AgentAdvertSchema,
  type AgentDescriptor,
  AgentDescriptorSchema,
} from './agents.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { StateKeySpecSchema } from './agents.ts';
export {
  type AgentCurrentVersion,
  AgentCurrentVersionSchema,
  type AgentVersionAdvert,
  AgentVersionAdvertSchema,
  type AgentVersionInfo,
  AgentVersionSchema,
  PromoteAgentVersionRequestSchema,
  type Versioning,
  VersioningSchema,
} from './agent-versions.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { AgentVersionInfoSchema, type PromoteAgentVersionRequest } from './agent-versions.ts';
export {
  AgentListSchema,
  type CancelResponse,
  CancelResponseSchema,
  type CreateRunResponse,
  CreateRunResponseSchema,
  type DecisionsResponse,
  DecisionsResponseSchema,
  type DeleteThreadResponse,
  DeleteThreadResponseSchema,
  type RunLinks,
  type RunPage,
  RunPageSchema,
  type RunSummary,
  type ThreadResponse,
  ThreadResponseSchema,
} from './http.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { type AgentList, RunLinksSchema, RunSummarySchema } from './http.ts';
// Scheduled runs (issue 13)
export {
  type CreateScheduleRequest,
  CreateScheduleRequestSchema,
  instantMs,
  type Schedule,
  SCHEDULE_RECENT_FIRINGS,
  type ScheduleDetail,
  ScheduleDetailSchema,
  type ScheduleFiring,
  type SchedulePage,
  SchedulePageSchema,
  ScheduleSchema,
  type ScheduleState,
} from './schedules.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  CronExpressionSchema,
  type FiringOutcome,
  FiringOutcomeSchema,
  type Instant,
  InstantSchema,
  ScheduleFiringSchema,
  ScheduleLinksSchema,
  ScheduleStateSchema,
  TimeZoneSchema,
} from './schedules.ts';
export {
  type CreatedRunWebhook,
  type RunChildFinishedData,
  RunChildFinishedDataSchema,
  type RunWebhookRequest,
  type RunWebhooksResponse,
  RunWebhooksResponseSchema,
  WEBHOOK_EVENT_TYPES,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEndpointName,
  type WebhookEventType,
  type WebhookMessage,
  WebhookMessageSchema,
  WebhookUrlSchema,
} from './webhooks.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export {
  CreatedRunWebhookSchema,
  type RunDeadlineData,
  RunDeadlineDataSchema,
  type RunFinishedData,
  RunFinishedDataSchema,
  type RunWaitingData,
  RunWaitingDataSchema,
  RunWebhookRequestSchema,
  WebhookAttemptSchema,
  WebhookDeliverySchema,
  WebhookDeliveryStatusSchema,
  WebhookEndpointNameSchema,
  WebhookEventTypeSchema,
  WebhookSecretSchema,
} from './webhooks.ts';
export { canonicalJson, endsStream, parseRetryAfter, type StreamUntil } from './wire-facts.ts';
export {
  type BulkReplayFilter,
  BulkReplayRequestSchema,
  BulkReplayStatusSchema,
  type BulkReplayStatus,
  ForkRunRequestSchema,
  type ForkRunRequest,
  ForkRunResponseSchema,
  type ForkRunResponse,
} from './forks.ts';
export { type RunOrigin } from './run-origin.ts';
// Tenant API keys managed at run time (issue 35)
export {
  ApiKeyListSchema,
  type ApiKeyView,
  type CreateApiKeyRequest,
  CreateApiKeyRequestSchema,
  type CreatedApiKey,
  CreatedApiKeySchema,
  RotateApiKeyRequestSchema,
} from './api-keys.ts';
/** @public A wire shape for clients that validate what they receive or build what they send. */
export { ApiKeyStatusSchema, ApiKeyViewSchema } from './api-keys.ts';
