import { z } from 'zod';

/**
 * Where a fork or a replay came from (stored on the new run's checkpoint; optional, so runs
 * written before forks read as runs of their own).
 */
export const RunOriginSchema = z.object({
  kind: z.enum(['fork', 'replay']),
  /** The run it was forked from (or replays). */
  runId: z.string(),
  /** That run's thread: the fork's own thread is a new branch of it. */
  threadId: z.string(),
  /** The original's last event the fork's state includes; its events 1…atSeq open the fork's log. */
  atSeq: z.number().int().positive(),
  /** The agent version the caller asked the fork to continue on (recorded; routing is separate). */
  agentVersion: z.string().optional(),
});
export type RunOrigin = z.infer<typeof RunOriginSchema>;
