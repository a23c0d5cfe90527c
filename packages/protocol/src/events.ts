import { z } from 'zod';
import {
  ExecutionModeSchema,
  PhaseSchema,
  RunStatusSchema,
  ToolCallStatusSchema,
} from './enums.ts';
import { ChildRunEndSchema, ChildRunLinkSchema } from './child-runs.ts';
import { DeadlineOutcomeSchema, FinalDeadlineOutcomeSchema } from './deadlines.ts';
import { DecisionSchema } from './decisions.ts';
import { JsonObjectSchema } from './json.ts';
import { AssistantMessageSchema, MessageSchema } from './messages.ts';
import { TerminationReasonSchema } from './termination.ts';
import { StatePatchSchema, SuspendTicketSchema, ToolOutcomeSchema } from './tools.ts';
import { UsageSchema } from './usage.ts';

const step = z.number().int().nonnegative();

/** Every event body; the envelope (seq, ids, time) is added when the event is appended. */
export const EventBodySchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('run.created'),
    agent: z.string(),
    executionMode: ExecutionModeSchema,
  }),
  z.object({
    type: z.literal('run.started'),
    agent: z.string(),
    executionMode: ExecutionModeSchema,
  }),
  z.object({ type: z.literal('run.status'), from: RunStatusSchema, to: RunStatusSchema }),
  z.object({ type: z.literal('message.input'), message: MessageSchema }),
  z.object({ type: z.literal('step.started'), step }),
  z.object({ type: z.literal('phase'), step, phase: PhaseSchema }),
  z.object({ type: z.literal('text.delta'), step, messageId: z.string(), delta: z.string() }),
  z.object({ type: z.literal('reasoning.delta'), step, messageId: z.string(), delta: z.string() }),
  /** A partial inference (deltas) of this step was abandoned; clients drop its text. */
  z.object({ type: z.literal('inference.reset'), step, messageId: z.string() }),
  /**
   * A model call of this step failed with a retryable error; the next attempt starts after
   * delayMs. Deltas it streamed are dropped by the inference.reset the next attempt emits.
   */
  z.object({
    type: z.literal('model.retry'),
    step,
    /** The attempt that failed (1 = the first call). */
    attempt: z.number().int().positive(),
    delayMs: z.number().int().nonnegative(),
    reason: z.string(),
    message: z.string(),
  }),
  z.object({ type: z.literal('message.assistant'), step, message: AssistantMessageSchema }),
  z.object({
    type: z.literal('tool_call.created'),
    step,
    toolCallId: z.string(),
    toolName: z.string(),
    arguments: JsonObjectSchema,
    index: z.number().int(),
  }),
  z.object({
    type: z.literal('tool_call.status'),
    toolCallId: z.string(),
    toolName: z.string(),
    from: ToolCallStatusSchema,
    to: ToolCallStatusSchema,
  }),
  z.object({
    type: z.literal('tool_call.suspended'),
    toolCallId: z.string(),
    toolName: z.string(),
    ticket: SuspendTicketSchema,
  }),
  z.object({
    type: z.literal('tool_call.result'),
    toolCallId: z.string(),
    toolName: z.string(),
    outcome: ToolOutcomeSchema,
    durationMs: z.number().nonnegative().optional(),
  }),
  /**
   * An agent tool's call started running: its execution is the child run named here (goa-ai
   * ChildRunLink). Recorded before the child run is created, under the same commit.
   */
  z.object({ type: z.literal('child_run.linked'), link: ChildRunLinkSchema }),
  /** A child run ended and its end became the call's result (follows its tool_call.result). */
  z.object({ type: z.literal('child_run.finished'), child: ChildRunEndSchema }),
  z.object({ type: z.literal('decision.applied'), decision: DecisionSchema }),
  /** An accepted decision the run ended without applying (it was cancelled or failed first). */
  z.object({
    type: z.literal('decision.discarded'),
    decision: DecisionSchema,
    reason: z.string(),
  }),
  /**
   * A suspended call's deadline passed with no decision. `outcome` is what it did: deny or
   * resume (a decision with source 'deadline' follows, committed in the same write), cancel (the
   * run's cancel request follows) or escalate (tool_call.deadline_escalated follows).
   */
  z.object({
    type: z.literal('tool_call.deadline_expired'),
    toolCallId: z.string(),
    toolName: z.string(),
    /** The deadline that passed, epoch ms (`at` is when the event was committed). */
    deadlineAt: z.number(),
    outcome: DeadlineOutcomeSchema,
  }),
  /** An escalating deadline passed: the run's webhooks fire and the deadline moved to `deadlineAt`. */
  z.object({
    type: z.literal('tool_call.deadline_escalated'),
    toolCallId: z.string(),
    toolName: z.string(),
    /** The new deadline, epoch ms. */
    deadlineAt: z.number(),
    /** What happens when the new deadline passes. */
    outcome: FinalDeadlineOutcomeSchema,
    reason: z.string().optional(),
  }),
  /** A cancel was requested; the run ends Cancelled at its next phase boundary. */
  z.object({ type: z.literal('run.cancel_requested') }),
  z.object({
    type: z.literal('state.delta'),
    scope: z.enum(['run', 'thread']),
    patches: z.array(StatePatchSchema),
  }),
  z.object({
    type: z.literal('state.conflict'),
    key: z.string(),
    winner: z.string(),
    rejected: z.array(z.string()),
  }),
  z.object({ type: z.literal('step.finished'), step, usage: UsageSchema }),
  z.object({
    type: z.literal('run.finished'),
    status: RunStatusSchema,
    termination: TerminationReasonSchema,
    usage: UsageSchema,
  }),
]);
export type EventBody = z.infer<typeof EventBodySchema>;
export type EventType = EventBody['type'];
export type EventOf<T extends EventType> = Extract<RunEvent, { type: T }>;

export const EventEnvelopeSchema = z.object({
  seq: z
    .number()
    .int()
    .positive()
    .describe("Position in the run's event log, from 1, without gaps; the SSE event id."),
  runId: z.string().describe('The run the event belongs to.'),
  threadId: z.string().describe("The run's thread."),
  turnId: z.string().describe('The turn (run) within the thread.'),
  at: z.number().describe('When the event was committed, epoch milliseconds.'),
});
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;

export const RunEventSchema = z.intersection(EventEnvelopeSchema, EventBodySchema);
export type RunEvent = EventEnvelope & EventBody;
