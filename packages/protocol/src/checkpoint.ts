import { z } from 'zod';
import {
  DecisionReplayPolicySchema,
  ExecutionModeSchema,
  PhaseSchema,
  RunStatusSchema,
} from './enums.ts';
import { RunParentSchema } from './child-runs.ts';
import { RunOriginSchema } from './run-origin.ts';
import { RunPrioritySchema } from './fairness.ts';
import { DeadlinePolicySchema } from './deadlines.ts';
import { DecisionSchema } from './decisions.ts';
import { JsonValueSchema } from './json.ts';
import { MessageSchema } from './messages.ts';
import { StopConditionSchema } from './stop-conditions.ts';
import { TerminationReasonSchema } from './termination.ts';
import { ToolCallStateSchema } from './tools.ts';
import { UsageSchema } from './usage.ts';
import { FORMATS } from './formats.ts';

/** The checkpoint format this release writes (formats.ts: readers check `v` with readFormat). */
export const CHECKPOINT_VERSION = FORMATS.checkpoint.writes;

export const RunIdentitySchema = z.object({
  runId: z.string(),
  threadId: z.string(),
  turnId: z.string(),
  tenantId: z.string(),
  agent: z.string(),
  /** Set on child runs (agent-as-tool): the parent call that started this run. */
  parent: RunParentSchema.optional(),
  /** 1 (first) … 5 (last); absent: 3. Carried by every job of the run; children inherit it. */
  priority: RunPrioritySchema.optional(),
  /** Who the run is fair to (docs/fairness.md); absent: its tenant. Children inherit it. */
  fairnessKey: z.string().optional(),
  /**
   * The agent version the run was created on (docs/deployment-and-scaling.md); its jobs go only
   * to workers that serve it. Absent on runs of releases before versions: routed by agent alone.
   */
  agentVersion: z.string().optional(),
});
export type RunIdentity = z.infer<typeof RunIdentitySchema>;

export const StateScopesSchema = z.object({
  run: z.record(z.string(), JsonValueSchema),
  thread: z.record(z.string(), JsonValueSchema),
});
export type StateScopes = z.infer<typeof StateScopesSchema>;

/**
 * Everything needed to continue a run on any process: plain data, no closures.
 * The store wraps it with a version for compare-and-set.
 */
export const CheckpointSchema = z.object({
  v: z.literal(CHECKPOINT_VERSION),
  identity: RunIdentitySchema,
  status: RunStatusSchema,
  phase: PhaseSchema,
  step: z.number().int().nonnegative(),
  executionMode: ExecutionModeSchema,
  replayPolicy: DecisionReplayPolicySchema,
  stopConditions: z.array(StopConditionSchema),
  /** Thread history at run start followed by the messages this run added. */
  messages: z.array(MessageSchema),
  /** messages[0, historyLength) came from the thread before this run. */
  historyLength: z.number().int().nonnegative(),
  /** The current round's tool calls (the previous round's are cleared at StepStart). */
  calls: z.record(z.string(), ToolCallStateSchema),
  /** Call ids of the current round in the order the model returned them. */
  round: z.array(z.string()),
  state: StateScopesSchema,
  usage: UsageSchema,
  counters: z.object({
    consecutiveErrors: z.number().int().nonnegative(),
    /** Canonical signatures (name + sorted args) of recent tool calls, oldest first. */
    recentToolCalls: z.array(z.string()),
    /** Names of tools called in the last step (for stop_on_tool). */
    lastStepTools: z.array(z.string()),
  }),
  /** Decisions received but not yet applied (durable inbox). */
  inbox: z.array(DecisionSchema),
  /** Every decision ever accepted for this run: a repeated decisionId is a no-op. */
  decisionLog: z.array(DecisionSchema),
  /** What BeforeInference prepared for the pending model call (durable so a retry asks the same). */
  inference: z
    .object({
      context: z.array(z.string()),
      params: z.record(z.string(), JsonValueSchema),
      tools: z.array(z.string()),
    })
    .nullable(),
  termination: TerminationReasonSchema.nullable(),
  /** Set by an external cancel; honored at the next phase boundary. */
  cancelRequested: z.boolean(),
  metadata: z.record(z.string(), z.string()),
  /** The run's default deadline for waiting calls (run options, else the agent's); absent: none. */
  deadline: DeadlinePolicySchema.optional(),
  createdAt: z.number(),
  startedAt: z.number().nullable(),
  updatedAt: z.number(),
  finishedAt: z.number().nullable(),
  /** Set on a fork or a replay: the run and event it continues from (absent: a run of its own). */
  origin: RunOriginSchema.optional(),
});
export type Checkpoint = z.infer<typeof CheckpointSchema>;
