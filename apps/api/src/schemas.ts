import { AgentVersionSchema, FairnessKeySchema, IdSchema, RunStatusSchema } from '@baton/protocol';
import { z } from 'zod';

/**
 * HTTP query shapes of the API. Request and response bodies are the protocol's schemas (response
 * bodies in @baton/protocol's http.ts, so clients share them); all of them feed /openapi.json.
 */
export {
  AgentListSchema,
  CancelResponseSchema,
  CreateRunResponseSchema,
  DecisionsResponseSchema,
  DeleteThreadResponseSchema,
  RunLinksSchema,
  RunPageSchema,
  RunSummarySchema,
  ThreadResponseSchema,
  type CreateRunResponse,
  type RunLinks,
} from '@baton/protocol';

const limit = z.coerce.number().int().min(1).max(100).default(20);

/**
 * A free-text filter (an agent's or tenant's name). NUL is refused here: no name holds one, and
 * PostgreSQL's text cannot, so the archive would answer a 500 where Redis answered an empty list.
 */
const nameFilter = z
  .string()
  .min(1)
  .max(128)
  .refine((s) => !s.includes('\0'), 'must not contain NUL (%00) characters');

export const ListRunsQuerySchema = z.strictObject({
  status: RunStatusSchema.optional(),
  agent: nameFilter.optional(),
  thread: IdSchema.optional(),
  /** Runs of this fairness key (a run without one has its tenant's). */
  fairnessKey: FairnessKeySchema.optional(),
  /** Runs created on this agent version. */
  agentVersion: AgentVersionSchema.optional(),
  /** `queued`: only runs waiting for a slot of their tenant or fairness key (docs/fairness.md). */
  admission: z.enum(['queued']).optional(),
  cursor: z.string().min(1).max(512).optional(),
  limit: limit.optional(),
  /** Admin keys only: list another tenant's runs. */
  tenant: nameFilter.optional(),
});

export const ThreadRunsQuerySchema = z.strictObject({
  status: RunStatusSchema.optional(),
  agent: nameFilter.optional(),
  cursor: z.string().min(1).max(512).optional(),
  limit: limit.optional(),
});

export const ThreadQuerySchema = z.strictObject({
  /** Messages of the page (at most; fewer past 1 MiB of JSON): the newest before the cursor. */
  limit: z.coerce.number().int().min(1).max(1_000).default(100).optional(),
  /** A previous page's nextCursor: the messages before that page. */
  cursor: z.string().min(1).max(64).optional(),
});

export const EventsQuerySchema = z.strictObject({
  /** Replay events with seq > after (the Last-Event-ID header wins when both are sent). */
  after: z.coerce.number().int().min(0).optional(),
  /** 'done' (default): follow the run to the end; 'suspended': also end when the run starts waiting. */
  until: z.enum(['done', 'suspended']).optional(),
  /** '1': also stream the run's child runs' events (agent-as-tool), with a composite cursor. */
  children: z.enum(['0', '1']).optional(),
});

export const HealthSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.string()).optional(),
  /**
   * /readyz: the workers heartbeating now ('down': none). Reported, never a condition of the
   * status code: the API takes runs without workers (they wait in their queues).
   */
  workers: z
    .object({ live: z.number().int().nonnegative(), state: z.enum(['up', 'down']) })
    .optional(),
});
