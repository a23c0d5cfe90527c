import { z } from 'zod';
import { AgentDescriptorSchema } from './agents.ts';
import { QueuedInfoSchema, RunPrioritySchema } from './fairness.ts';
import { RunStatusSchema } from './enums.ts';
import { JsonValueSchema } from './json.ts';
import { MessageSchema } from './messages.ts';
import { CreatedRunWebhookSchema } from './webhooks.ts';

/**
 * Response bodies of the HTTP API. They live here (not in apps/api) so that clients validate what
 * they receive against the very schemas the API builds its responses and /openapi.json with.
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
  /** Set when the run waits for a slot of its tenant or fairness key (docs/fairness.md). */
  queued: QueuedInfoSchema.optional(),
  /** The agent version it runs on (absent: its agent's workers predate versions). */
  agentVersion: z.string().optional(),
  links: RunLinksSchema,
  /** The run's webhook (when the request named one), with its generated secret shown once. */
  webhook: CreatedRunWebhookSchema.optional(),
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
  /**
   * Its priority and fairness key while it is not finished (docs/fairness.md; a finished run's
   * are on its page). Absent from servers before lists showed admission.
   */
  priority: RunPrioritySchema.optional(),
  fairnessKey: z.string().optional(),
  /** The agent version it was created on (absent: before versions, or an archived run). */
  agentVersion: z.string().optional(),
  /** Set while the run waits for a slot of its tenant or fairness key, as GET /v1/runs/:id. */
  queued: QueuedInfoSchema.optional(),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const RunPageSchema = z.object({
  runs: z.array(RunSummarySchema),
  nextCursor: z.string().nullable(),
});
export type RunPage = z.infer<typeof RunPageSchema>;

export const DecisionsResponseSchema = z.object({
  runId: z.string(),
  accepted: z.array(z.string()),
  duplicates: z.array(z.string()),
  status: RunStatusSchema,
  /** Decisions for child runs' calls, per run they were routed to (agent-as-tool). */
  routed: z
    .array(
      z.object({
        runId: z.string(),
        accepted: z.array(z.string()),
        duplicates: z.array(z.string()),
      }),
    )
    .optional(),
});
export type DecisionsResponse = z.infer<typeof DecisionsResponseSchema>;

export const DeleteThreadResponseSchema = z.object({
  threadId: z.string(),
  /** How many finished runs of the thread were deleted with it. */
  deletedRuns: z.number().int().nonnegative(),
});
export type DeleteThreadResponse = z.infer<typeof DeleteThreadResponseSchema>;

export const CancelResponseSchema = z.object({
  runId: z.string(),
  status: RunStatusSchema,
});
export type CancelResponse = z.infer<typeof CancelResponseSchema>;

export const ThreadResponseSchema = z.object({
  threadId: z.string(),
  activeRunId: z.string().nullable(),
  queued: z.array(z.string()),
  /** Every run of the thread, oldest first (createdAt, then id), archived ones included. */
  runIds: z.array(z.string()),
  /** A page of the history, oldest first: the newest messages before the cursor (or of all). */
  messages: z.array(MessageSchema),
  state: z.record(z.string(), JsonValueSchema),
  /**
   * The cursor of the page of older messages (`?cursor=`); null when this page begins the
   * history. Absent from servers before thread pages (their `messages` is the whole history).
   */
  nextCursor: z.string().nullable().optional(),
});
export type ThreadResponse = z.infer<typeof ThreadResponseSchema>;

export const AgentListSchema = z.object({ agents: z.array(AgentDescriptorSchema) });
export type AgentList = z.infer<typeof AgentListSchema>;
