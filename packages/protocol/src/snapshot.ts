import { z } from 'zod';
import {
  ExecutionModeSchema,
  PhaseSchema,
  ResumeModeSchema,
  RunStatusSchema,
  ToolCallStatusSchema,
} from './enums.ts';
import { ChildRunLinkSchema, ChildRunViewSchema, RunParentSchema } from './child-runs.ts';
import { RunOriginSchema } from './run-origin.ts';
import { DecisionActionSchema } from './decisions.ts';
import { DecisionSourceSchema } from './waits.ts';
import { QueuedInfoSchema } from './fairness.ts';
import { JsonObjectSchema, JsonValueSchema } from './json.ts';
import { TerminationReasonSchema } from './termination.ts';
import { SuspendReasonSchema, ToolOutcomeSchema } from './tools.ts';
import { UsageSchema } from './usage.ts';
import { WaitForSchema } from './waits.ts';

/**
 * Run snapshots (seed: goa-ai run.Snapshot): a derived view of a run computed by folding its
 * event log. Snapshots are never stored; they are recomputed from the append-only log, so any
 * process holding the log (API, worker, a streaming client) derives the same view.
 *
 * Times are epoch milliseconds taken from the events' `at`.
 */

/** One tool call the run is waiting on, with the ticket it was suspended with. */
export const AwaitedToolCallSchema = z.object({
  toolCallId: z.string(),
  toolName: z.string(),
  reason: SuspendReasonSchema,
  message: z.string(),
  parameters: JsonValueSchema.optional(),
  /** JSON Schema a resume decision's payload must satisfy. */
  responseSchema: JsonObjectSchema.optional(),
  resumeMode: ResumeModeSchema,
  /** What else completes it: an event (name, key) by its expiry, when the ticket says so. */
  waitFor: WaitForSchema.optional(),
  /** When the call was suspended. */
  since: z.number(),
  /** Set when the call belongs to a descendant run (agent-as-tool): send decisions for it here. */
  runId: z.string().optional(),
  /** When the call stops waiting without a decision, and what happens then; absent: never. */
  deadline: z
    .object({
      at: z.number(),
      action: z.enum(['deny', 'resume', 'cancel', 'escalate']),
      escalated: z.boolean().optional(),
    })
    .optional(),
});
export type AwaitedToolCall = z.infer<typeof AwaitedToolCallSchema>;

/** What the run waits for: the calls that are suspended right now (never empty). */
export const AwaitSnapshotSchema = z.object({
  kind: z.literal('tool_calls'),
  calls: z.array(AwaitedToolCallSchema).min(1),
  /** Every awaited call is a durable sleep: the run waits for time alone, until the earliest. */
  waitingFor: z.object({ kind: z.literal('time'), until: z.number() }).optional(),
});
export type AwaitSnapshot = z.infer<typeof AwaitSnapshotSchema>;

/** A tool call of any step of the run, as last observed. */
export const ToolCallSnapshotSchema = z.object({
  toolCallId: z.string(),
  toolName: z.string(),
  step: z.number().int().nonnegative(),
  /** Position in the step's round, in the order the model returned the calls. */
  index: z.number().int(),
  arguments: JsonObjectSchema,
  status: ToolCallStatusSchema,
  /** Number of replays seen (each Suspended -> Resuming); 0 for a call never resumed. */
  attempt: z.number().int().nonnegative(),
  /** When the model's call was committed (tool_call.created). */
  scheduledAt: z.number(),
  /** When the latest execution began (status became running). */
  startedAt: z.number().optional(),
  /** When the call reached a terminal status. */
  completedAt: z.number().optional(),
  durationMs: z.number().nonnegative().optional(),
  outcome: ToolOutcomeSchema.optional(),
  /** First line of the outcome's error, shortened, for lists and dashboards. */
  errorSummary: z.string().optional(),
});
export type ToolCallSnapshot = z.infer<typeof ToolCallSnapshotSchema>;

/** A decision the run applied (decision.applied), in application order. */
export const AppliedDecisionSchema = z.object({
  decisionId: z.string(),
  toolCallId: z.string(),
  action: DecisionActionSchema,
  at: z.number(),
  /** Where it came from (absent or api: a client's; 'deadline': taken by the call's deadline). */
  source: DecisionSourceSchema.optional(),
  /** Set when the run ended before applying this accepted decision: why. */
  discarded: z.string().optional(),
});
export type AppliedDecision = z.infer<typeof AppliedDecisionSchema>;

/** The assistant message of the current step while it streams (not yet committed). */
export const StreamingMessageSchema = z.object({
  step: z.number().int().nonnegative(),
  messageId: z.string(),
  text: z.string(),
  reasoning: z.string(),
});
export type StreamingMessage = z.infer<typeof StreamingMessageSchema>;

export const RunSnapshotSchema = z.object({
  runId: z.string().describe('The run.'),
  threadId: z.string().describe('The thread the run belongs to.'),
  turnId: z.string().describe('The turn within the thread.'),
  agent: z.string().describe('Name of the agent the run runs.'),
  status: RunStatusSchema.describe(
    'Where the run is in its life: created, running, waiting or done.',
  ),
  /** Where the run is in its loop; null before any event says. */
  phase: PhaseSchema.nullable().describe(
    'Where the run is in its loop; null before any event says.',
  ),
  /**
   * 'event' once the log carried explicit phase events (then only those move `phase`);
   * 'inferred' when `phase` is deduced from the other events; null while unknown.
   */
  phaseSource: z
    .enum(['event', 'inferred'])
    .nullable()
    .describe('Whether `phase` came from phase events or was inferred; null while unknown.'),
  step: z.number().int().nonnegative().describe('Number of the current (or last) model step.'),
  executionMode: ExecutionModeSchema.describe('How the run executes tool calls and decisions.'),
  termination: TerminationReasonSchema.nullable().describe(
    'Why the run ended (completed, failed, cancelled, a stop condition…); null until it ends.',
  ),
  createdAt: z.number().describe('When the run was created, epoch milliseconds.'),
  startedAt: z.number().nullable().describe('When a worker first started it; null while queued.'),
  updatedAt: z.number().describe('Time of the last event folded in, epoch milliseconds.'),
  finishedAt: z.number().nullable().describe('When the run ended; null until it does.'),
  /** Seq of the last event folded in; events at or below it are ignored. */
  lastSeq: z
    .number()
    .int()
    .nonnegative()
    .describe('Seq of the last event folded in; stream from here to follow the run.'),
  /** Content of the most recent committed assistant message with text. */
  lastAssistantMessage: z
    .string()
    .nullable()
    .describe('Text of the most recent committed assistant message with text.'),
  /** The current step's partial assistant message while inference streams; null otherwise. */
  streaming: StreamingMessageSchema.nullable().describe(
    'The partial assistant message while the model streams; null otherwise.',
  ),
  await: AwaitSnapshotSchema.nullable().describe(
    'The suspended tool calls the run waits on (answer them with decisions); null when none.',
  ),
  /** Every tool call of the run (all steps), in creation order. */
  toolCalls: z
    .array(ToolCallSnapshotSchema)
    .describe('Every tool call of the run, all steps, in creation order.'),
  /** Cumulative usage as of the last step.finished / run.finished. */
  usage: UsageSchema.describe('Cumulative token usage as of the last finished step.'),
  decisions: z
    .array(AppliedDecisionSchema)
    .describe('Decisions the run applied, in application order.'),
  /** A cancel was requested and the run has not ended yet (or ended Cancelled). */
  cancelRequested: z
    .boolean()
    .describe('A cancel was requested and the run has not ended yet (or ended cancelled).'),
  /** Child runs its agent tools started (child_run.linked), in order; absent when none. */
  childRuns: z
    .array(ChildRunLinkSchema)
    .optional()
    .describe('Child runs its agent tools started, in order; absent when none.'),
});
export type RunSnapshot = z.infer<typeof RunSnapshotSchema>;

/** GET /v1/runs/:id: the snapshot, and what the API knows beside the run's event log. */
export const RunViewSchema = RunSnapshotSchema.extend({
  /**
   * The run has work to do (created or running) but no live worker runs its agent: its job
   * waits in the agent's queue and the run moves again when a worker registers the agent.
   */
  waitingForWorker: z.boolean(),
  /** The schedule whose firing created the run (scheduled runs). */
  scheduleId: z.string().optional(),
  /** Child runs with their current status (agent-as-tool); absent when none. */
  childRuns: z.array(ChildRunViewSchema).optional(),
  /** On a child run: the parent run and the call that started it; absent on top-level runs. */
  parent: RunParentSchema.optional(),
  /** Its dispatch priority (1 first … 5 last) and fairness key (docs/fairness.md). */
  priority: z.number().int().optional(),
  fairnessKey: z.string().optional(),
  /** The agent version the run runs on (absent: a run of a release before agent versions). */
  agentVersion: z.string().optional(),
  /** Set while the run waits for a slot of its tenant or fairness key: why, and where it stands. */
  queued: QueuedInfoSchema.optional(),
  /** On a fork or a replay: the run and the event it continues from. */
  origin: RunOriginSchema.optional(),
});
export type RunView = z.infer<typeof RunViewSchema>;
