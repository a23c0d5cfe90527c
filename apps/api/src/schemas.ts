import {
  AgentDescriptorSchema,
  IdSchema,
  JsonValueSchema,
  MessageSchema,
  RunStatusSchema,
} from '@baton/protocol';
import { z } from 'zod';

/**
 * HTTP response and query shapes of the API (request bodies are the protocol's schemas).
 * They feed /openapi.json; routes build their responses with these types.
 */

export const RunLinksSchema = z.object({
  self: z.string(),
  events: z.string(),
  decisions: z.string(),
  cancel: z.string(),
  thread: z.string(),
});
export type RunLinks = z.infer<typeof RunLinksSchema>;

export const CreateRunResponseSchema = z.object({
  runId: z.string(),
  threadId: z.string(),
  turnId: z.string(),
  status: RunStatusSchema,
  /** Set when the run waits behind the thread's active run (multitask enqueue / interrupt). */
  queuedBehind: z.string().optional(),
  links: RunLinksSchema,
});
export type CreateRunResponse = z.infer<typeof CreateRunResponseSchema>;

export const RunSummarySchema = z.object({
  runId: z.string(),
  tenantId: z.string(),
  agent: z.string(),
  threadId: z.string(),
  status: RunStatusSchema,
  createdAt: z.number(),
  updatedAt: z.number(),
});

export const RunPageSchema = z.object({
  runs: z.array(RunSummarySchema),
  nextCursor: z.string().nullable(),
});

const limit = z.coerce.number().int().min(1).max(100).default(20);

export const ListRunsQuerySchema = z.strictObject({
  status: RunStatusSchema.optional(),
  agent: z.string().min(1).max(128).optional(),
  thread: IdSchema.optional(),
  cursor: z.string().min(1).max(512).optional(),
  limit: limit.optional(),
  /** Admin keys only: list another tenant's runs. */
  tenant: z.string().min(1).max(128).optional(),
});

export const ThreadRunsQuerySchema = z.strictObject({
  status: RunStatusSchema.optional(),
  agent: z.string().min(1).max(128).optional(),
  cursor: z.string().min(1).max(512).optional(),
  limit: limit.optional(),
});

export const EventsQuerySchema = z.strictObject({
  /** Replay events with seq > after (the Last-Event-ID header wins when both are sent). */
  after: z.coerce.number().int().min(0).optional(),
  /** 'done' (default): follow the run to the end; 'suspended': also end when the run starts waiting. */
  until: z.enum(['done', 'suspended']).optional(),
});

export const DecisionsResponseSchema = z.object({
  runId: z.string(),
  accepted: z.array(z.string()),
  duplicates: z.array(z.string()),
  status: RunStatusSchema,
});

export const DeleteThreadResponseSchema = z.object({
  threadId: z.string(),
  /** How many finished runs of the thread were deleted with it. */
  deletedRuns: z.number().int().nonnegative(),
});

export const CancelResponseSchema = z.object({
  runId: z.string(),
  status: RunStatusSchema,
});

export const ThreadResponseSchema = z.object({
  threadId: z.string(),
  activeRunId: z.string().nullable(),
  queued: z.array(z.string()),
  runIds: z.array(z.string()),
  messages: z.array(MessageSchema),
  state: z.record(z.string(), JsonValueSchema),
});

export const AgentListSchema = z.object({ agents: z.array(AgentDescriptorSchema) });

export const HealthSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.string()).optional(),
});
