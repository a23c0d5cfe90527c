import { z } from 'zod';
import { RunStatusSchema } from './enums.ts';
import { RunLinksSchema } from './http.ts';
import { InputMessageSchema } from './messages.ts';
import { RunOriginSchema } from './run-origin.ts';

export const ForkRunRequestSchema = z.strictObject({
  /** The original's event the fork starts after (its state includes that event). */
  atSeq: z.number().int().positive(),
  /** User messages the fork adds after atSeq (at a step boundary or after the run's end only). */
  input: z.strictObject({ messages: z.array(InputMessageSchema).min(1) }).optional(),
  /** The agent version the fork continues on; absent: the current one. */
  agentVersion: z.string().min(1).max(200).optional(),
});
export type ForkRunRequest = z.infer<typeof ForkRunRequestSchema>;

export const ForkRunResponseSchema = z.object({
  runId: z.string(),
  threadId: z.string(),
  turnId: z.string(),
  status: RunStatusSchema,
  origin: RunOriginSchema,
  links: RunLinksSchema,
});
export type ForkRunResponse = z.infer<typeof ForkRunResponseSchema>;

/** Which runs a bulk replay reruns (every field narrows; `status` failed and/or cancelled). */
export const BulkReplayFilterSchema = z.strictObject({
  agent: z.string().min(1).optional(),
  status: z
    .array(z.enum(['failed', 'cancelled']))
    .min(1)
    .default(['failed', 'cancelled']),
  /** createdAt bounds, epoch milliseconds (inclusive). */
  createdAfter: z.number().int().nonnegative().optional(),
  createdBefore: z.number().int().nonnegative().optional(),
  /** Only runs created on this agent version (runs that record none never match). */
  agentVersion: z.string().min(1).optional(),
  /** At most this many runs are replayed (the newest first). */
  limit: z.number().int().min(1).max(10_000).default(1_000),
});
export type BulkReplayFilter = z.infer<typeof BulkReplayFilterSchema>;

export const BulkReplayRequestSchema = z.strictObject({ filter: BulkReplayFilterSchema });

export const BulkReplayStatusSchema = z.object({
  replayId: z.string(),
  state: z.enum(['running', 'done']),
  /** Runs the filter selected. */
  total: z.number().int().nonnegative(),
  /** Runs looked at so far (replayed, skipped or failed). */
  processed: z.number().int().nonnegative(),
  replayed: z.number().int().nonnegative(),
  /** Selected runs that were not replayable when their turn came (e.g. deleted meanwhile). */
  skipped: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  /** Original run id → its replay's run id, for the runs replayed so far. */
  replays: z.record(z.string(), z.string()),
  createdAt: z.number(),
  updatedAt: z.number(),
});
export type BulkReplayStatus = z.infer<typeof BulkReplayStatusSchema>;
