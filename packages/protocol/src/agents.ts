import { z } from 'zod';
import { DecisionReplayPolicySchema, ExecutionModeSchema } from './enums.ts';
import { JsonValueSchema } from './json.ts';
import { AgentVersionInfoSchema, VersioningSchema } from './agent-versions.ts';
import { StopConditionSchema } from './stop-conditions.ts';
import { ToolDescriptorSchema } from './tools.ts';

export const StateKeySpecSchema = z.object({
  key: z.string(),
  scope: z.enum(['run', 'thread']),
  merge: z.enum(['exclusive', 'commutative']),
  reducer: z.enum(['sum', 'max', 'min', 'append', 'union']).optional(),
  persistent: z.boolean().optional(),
  initial: JsonValueSchema.optional(),
});

/**
 * What a worker advertises about an agent it can run (stored in Redis): data only, no code.
 * `workers` is kept for API versions that read it; liveness comes from heartbeats.
 */
export const AgentAdvertSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  executionMode: ExecutionModeSchema,
  replayPolicy: DecisionReplayPolicySchema.optional(),
  stopConditions: z.array(StopConditionSchema),
  stateKeys: z.array(StateKeySpecSchema),
  tools: z.array(ToolDescriptorSchema),
  /** Workers that advertised it recently (as the last advertising worker saw it). */
  workers: z.array(z.string()),
  updatedAt: z.number(),
  /**
   * The task queue (BATON_TASK_QUEUE) the advertising worker serves the agent on: where
   * producers put the agent's runs. Absent from adverts of older workers ('default').
   */
  taskQueue: z.string().optional(),
});
export type AgentAdvert = z.infer<typeof AgentAdvertSchema>;

/** An agent as the API shows it: its advert, with the workers whose heartbeat is current. */
export const AgentDescriptorSchema = AgentAdvertSchema.extend({
  /** Workers running the agent now (their heartbeat has not expired). */
  workers: z.array(z.string()),
  /**
   * At least one live worker runs it. A known agent without one still accepts runs: they wait
   * in its queue and start when a worker registers it.
   */
  available: z.boolean(),
  /** When a worker last advertised it (ms). */
  updatedAt: z.number(),
  /** Its versions, newest first (absent when no worker of a release with versions advertised it). */
  versions: z.array(AgentVersionInfoSchema).optional(),
  /** The version new runs get: promoted, else the newest a live worker serves. */
  currentVersion: z.string().optional(),
  /** Whether an operator promoted it (false: the default, newest live). */
  currentPinned: z.boolean().optional(),
  versioning: VersioningSchema.optional(),
});
export type AgentDescriptor = z.infer<typeof AgentDescriptorSchema>;
