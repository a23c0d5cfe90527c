import { z } from 'zod';
import { DeadlineOutcomeSchema } from './deadlines.ts';
import { RunStatusSchema } from './enums.ts';
import { AwaitSnapshotSchema } from './snapshot.ts';
import { TerminationReasonSchema } from './termination.ts';
import { UsageSchema } from './usage.ts';

/**
 * Webhooks: what a run (per request) or a tenant (per configuration) is told when the run ends,
 * starts waiting for a decision, or one of its child runs ends. Messages follow the Standard
 * Webhooks scheme (https://www.standardwebhooks.com): headers `webhook-id` (stable across
 * retries, so receivers deduplicate), `webhook-timestamp` and `webhook-signature`, and a body
 * `{ type, timestamp, data }`.
 */

export const WebhookEventTypeSchema = z.enum([
  'run.finished',
  'run.waiting',
  'run.child_finished',
  'tool_call.deadline',
]);
export type WebhookEventType = z.infer<typeof WebhookEventTypeSchema>;
export const WEBHOOK_EVENT_TYPES = WebhookEventTypeSchema.options;

/** `whsec_` + base64 of 24 to 64 random bytes (the Standard Webhooks secret format). */
export const WebhookSecretSchema = z
  .string()
  .regex(
    /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/,
    'must be "whsec_" followed by the base64 of 24 to 64 random bytes; omit it to have one generated',
  );

export const WebhookUrlSchema = z
  .url({ protocol: /^https?$/, message: 'must be an absolute http:// or https:// URL' })
  .max(2048);

/** `webhook` of POST /v1/runs. */
export const RunWebhookRequestSchema = z.strictObject({
  url: WebhookUrlSchema,
  /** Which events to send (default: all of them). */
  events: z
    .array(WebhookEventTypeSchema)
    .min(1)
    .max(WEBHOOK_EVENT_TYPES.length)
    .refine((a) => new Set(a).size === a.length, 'lists an event twice')
    .optional(),
  /**
   * Signing secret to use; when absent one is generated and returned once, in the 202 answer's
   * `webhook.secret`.
   */
  secret: WebhookSecretSchema.optional(),
});
export type RunWebhookRequest = z.infer<typeof RunWebhookRequestSchema>;

/** In the 202 answer of POST /v1/runs when the request named a webhook. */
export const CreatedRunWebhookSchema = z.object({
  url: z.string(),
  events: z.array(WebhookEventTypeSchema),
  /** The generated signing secret: shown this once (absent when the request supplied one). */
  secret: z.string().optional(),
});
export type CreatedRunWebhook = z.infer<typeof CreatedRunWebhookSchema>;

const RunRefSchema = {
  runId: z.string(),
  threadId: z.string(),
  turnId: z.string(),
  tenantId: z.string(),
  agent: z.string(),
  /** Seq of the run event this message reports. */
  seq: z.number().int().positive(),
  /** options.metadata of the run request. */
  metadata: z.record(z.string(), z.string()),
};

export const RunFinishedDataSchema = z.object({
  ...RunRefSchema,
  status: z.literal('done'),
  termination: TerminationReasonSchema,
  usage: UsageSchema,
  finishedAt: z.number(),
  /** Text of the last assistant message (truncated to 16,384 characters), if any. */
  lastAssistantMessage: z.string().nullable(),
});
export type RunFinishedData = z.infer<typeof RunFinishedDataSchema>;

export const RunWaitingDataSchema = z.object({
  ...RunRefSchema,
  status: z.literal('waiting'),
  /** Which calls wait, each with its ticket (what decision it needs, its response schema). */
  await: AwaitSnapshotSchema,
  since: z.number(),
});
export type RunWaitingData = z.infer<typeof RunWaitingDataSchema>;

export const RunChildFinishedDataSchema = z.object({
  ...RunRefSchema,
  child: z.object({
    runId: z.string(),
    agent: z.string(),
    status: RunStatusSchema,
    termination: TerminationReasonSchema,
    /** The parent's tool call the child ran for, when it ran as a tool. */
    toolCallId: z.string().optional(),
  }),
});
export type RunChildFinishedData = z.infer<typeof RunChildFinishedDataSchema>;

/**
 * A waiting call's deadline passed (`expired`: its outcome was applied) or escalated (`escalated`:
 * the deadline moved to `deadlineAt`, where `outcome` applies unless someone decides first).
 */
export const RunDeadlineDataSchema = z.object({
  ...RunRefSchema,
  toolCallId: z.string(),
  toolName: z.string(),
  event: z.enum(['expired', 'escalated']),
  /** expired: the deadline that passed; escalated: the new one. */
  deadlineAt: z.number(),
  outcome: DeadlineOutcomeSchema,
  /** escalated: the reason the deadline gave for escalating. */
  reason: z.string().optional(),
});
export type RunDeadlineData = z.infer<typeof RunDeadlineDataSchema>;

/** The JSON body of every webhook request. */
export const WebhookMessageSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('run.finished'),
    timestamp: z.string(),
    data: RunFinishedDataSchema,
  }),
  z.object({ type: z.literal('run.waiting'), timestamp: z.string(), data: RunWaitingDataSchema }),
  z.object({
    type: z.literal('run.child_finished'),
    timestamp: z.string(),
    data: RunChildFinishedDataSchema,
  }),
  z.object({
    type: z.literal('tool_call.deadline'),
    timestamp: z.string(),
    data: RunDeadlineDataSchema,
  }),
]);
export type WebhookMessage = z.infer<typeof WebhookMessageSchema>;

/** Who subscribed: the run's own request, or its tenant's configuration. */
export const WebhookEndpointNameSchema = z.enum(['run', 'tenant']);
export type WebhookEndpointName = z.infer<typeof WebhookEndpointNameSchema>;

export const WebhookAttemptSchema = z.object({
  attempt: z.number().int().positive(),
  at: z.number(),
  durationMs: z.number().nonnegative(),
  /** The receiver's HTTP status, when it answered. */
  statusCode: z.number().int().optional(),
  /** Why no usable answer came (timeout, connection refused, refused target …). */
  error: z.string().optional(),
  /** When the next attempt is due; absent when this attempt was the last one. */
  nextRetryAt: z.number().optional(),
});
export type WebhookAttempt = z.infer<typeof WebhookAttemptSchema>;

export const WebhookDeliveryStatusSchema = z.enum([
  /** Enqueued, no attempt made yet. */
  'pending',
  /** An attempt failed; another is scheduled (see the last attempt's nextRetryAt). */
  'retrying',
  /** A 2xx answer. */
  'delivered',
  /** Every attempt failed. */
  'failed',
  /** The receiver answered 410 Gone: no more attempts. */
  'stopped',
  /** The URL resolved to a private or loopback address at delivery time: not sent. */
  'refused',
]);
export type WebhookDeliveryStatus = z.infer<typeof WebhookDeliveryStatusSchema>;

export const WebhookDeliverySchema = z.object({
  webhookId: z.string(),
  endpoint: WebhookEndpointNameSchema,
  type: WebhookEventTypeSchema,
  seq: z.number().int().positive(),
  status: WebhookDeliveryStatusSchema,
  attempts: z.array(WebhookAttemptSchema),
});
export type WebhookDelivery = z.infer<typeof WebhookDeliverySchema>;

/** GET /v1/runs/:id/webhooks. */
export const RunWebhooksResponseSchema = z.object({
  runId: z.string(),
  endpoints: z.array(
    z.object({
      endpoint: WebhookEndpointNameSchema,
      url: z.string(),
      events: z.array(WebhookEventTypeSchema),
    }),
  ),
  /** In the order they were first enqueued; the log keeps a run's last 1,000 records. */
  deliveries: z.array(WebhookDeliverySchema),
});
export type RunWebhooksResponse = z.infer<typeof RunWebhooksResponseSchema>;
