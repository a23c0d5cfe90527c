import { z } from 'zod';
import { JsonObjectSchema, JsonValueSchema } from './json.ts';

/**
 * Where a decision came from: a client's decisions request (absent or 'api'), a waitpoint URL,
 * an event (POST /v1/events) or a wait's timeout. Recorded on the decision (and so in its
 * `decision.applied` event); optional so logs written before it read the same.
 */
/** `deadline`: a suspended call's deadline passed (timers, docs/ARCHITECTURE.md "Timers"). */
export const DecisionSourceSchema = z.enum(['api', 'waitpoint', 'event', 'timeout', 'deadline']);
export type DecisionSource = z.infer<typeof DecisionSourceSchema>;

/** Event names and correlation keys: short identifiers a sender and a waiter agree on. */
const EventNameSchema = z.string().min(1).max(200);
const EventKeySchema = z.string().min(1).max(500);

/** Longest wait for an event a tool may ask for (30 days). */
export const MAX_EVENT_WAIT_MS = 30 * 24 * 3600 * 1000;

/**
 * What a suspended call waits for besides a decision, carried by its ticket: an event with a
 * correlation key (`expiresAt` is set when the call suspends, now + timeoutMs; then the call
 * resolves with a timeout result if no event came), or a waitpoint URL its tool created
 * (ToolContext.waitpoint; the URL answers 404 after `expiresAt`).
 */
export const WaitForSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('event'),
    name: EventNameSchema,
    key: EventKeySchema,
    timeoutMs: z.number().int().positive().max(MAX_EVENT_WAIT_MS),
    expiresAt: z.number().optional(),
  }),
  z.object({ kind: z.literal('waitpoint'), expiresAt: z.number() }),
]);
export type WaitFor = z.infer<typeof WaitForSchema>;

/** POST /v1/events: resumes every run of the tenant waiting for this name and key. */
export const SendEventRequestSchema = z.strictObject({
  name: EventNameSchema.describe('Event name, e.g. payment.succeeded.'),
  key: EventKeySchema.describe('Correlation key, e.g. order-123.'),
  data: JsonValueSchema.optional().describe("Given to each waiting call as the event's data."),
});
export type SendEventRequest = z.infer<typeof SendEventRequestSchema>;

export const SendEventResponseSchema = z.object({
  resumed: z
    .number()
    .int()
    .nonnegative()
    .describe('Waiting calls this event resumed (each waiter is resumed by one event at most).'),
  runs: z.array(z.string()).describe('The runs those calls belong to.'),
});
export type SendEventResponse = z.infer<typeof SendEventResponseSchema>;

/** POST /v1/runs/:id/calls/:callId/waitpoint. */
export const CreateWaitpointRequestSchema = z.strictObject({
  expiresInMs: z
    .number()
    .int()
    .positive()
    .max(MAX_EVENT_WAIT_MS)
    .optional()
    .describe('How long the URL completes the call (default: 24 h).'),
});
export type CreateWaitpointRequest = z.infer<typeof CreateWaitpointRequestSchema>;

export const WaitpointCreatedSchema = z.object({
  url: z.string().describe('Path that completes the call without an API key; shown once.'),
  token: z.string().describe('The secret part of the URL; Baton keeps only its hash.'),
  runId: z.string(),
  toolCallId: z.string(),
  expiresAt: z.number().describe('Epoch ms after which the URL answers 404.'),
  responseSchema: JsonObjectSchema.optional(),
});
export type WaitpointCreated = z.infer<typeof WaitpointCreatedSchema>;

/** What POST /w/:token answers, the first time and on every repeat. */
export const WaitpointOutcomeSchema = z.object({
  runId: z.string(),
  toolCallId: z.string(),
  decisionId: z.string(),
  completedAt: z.number(),
  /** True when this request is a repeat: the call was completed before, by that request. */
  repeat: z.boolean(),
});
export type WaitpointOutcome = z.infer<typeof WaitpointOutcomeSchema>;
