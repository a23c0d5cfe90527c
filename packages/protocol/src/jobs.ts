import { z } from 'zod';
import { RunPrioritySchema } from './fairness.ts';

import { FORMATS } from './formats.ts';

/** The job format this release writes (formats.ts: readers check `v` with readFormat first). */
export const JOB_PAYLOAD_VERSION = FORMATS.job.writes;

/**
 * One phase round of one run. `v` accepts exactly what readFormat('job') reads (checked first,
 * in RunJobs.process): a release that reads a newer version than it writes widens it.
 */
export const StepJobSchema = z.object({
  v: z.literal(JOB_PAYLOAD_VERSION),
  kind: z.literal('step'),
  runId: z.string(),
  tenantId: z.string(),
  /** The run's agent (absent from jobs of older producers): lets a worker route without a read. */
  agent: z.string().optional(),
  /** The agent version the job must run on (absent: any worker of the agent, as before versions). */
  agentVersion: z.string().optional(),
  /** The run's priority (its BullMQ priority); absent from jobs of older producers. */
  priority: RunPrioritySchema.optional(),
  /** Why the round was scheduled; informs logs and dedup ids. */
  reason: z.enum(['start', 'continue', 'decision', 'reconcile', 'cancel']),
  /** Checkpoint version the round expects to start from (stale jobs are no-ops). */
  expectedVersion: z.number().int().nonnegative(),
});
export type StepJob = z.infer<typeof StepJobSchema>;

/** One tool call execution, a child of its round's step job in the parallel modes. */
export const ToolJobSchema = z.object({
  v: z.literal(JOB_PAYLOAD_VERSION),
  kind: z.literal('tool'),
  runId: z.string(),
  tenantId: z.string(),
  agent: z.string().optional(),
  agentVersion: z.string().optional(),
  priority: RunPrioritySchema.optional(),
  step: z.number().int(),
  toolCallId: z.string(),
  attempt: z.number().int().nonnegative(),
});
export type ToolJob = z.infer<typeof ToolJobSchema>;
