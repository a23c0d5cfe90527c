import { z } from 'zod';
import { ResumeModeSchema, ToolCallStatusSchema } from './enums.ts';
import { ChildRunEndSchema, ChildRunRefSchema } from './child-runs.ts';
import { TicketDeadlineSchema } from './deadlines.ts';
import { JsonObjectSchema, JsonValueSchema } from './json.ts';
import { WaitForSchema } from './waits.ts';

/** Why a call waits: shown to the human (or client) who must answer it. */
/** `sleep`: the call waits for its deadline only (a durable sleep; docs/agents-and-tools.md). */
export const SuspendReasonSchema = z.enum(['approval', 'client_tool', 'input', 'sleep']);
export type SuspendReason = z.infer<typeof SuspendReasonSchema>;

/** The ticket a suspended call carries until a decision arrives. */
export const SuspendTicketSchema = z.object({
  reason: SuspendReasonSchema,
  message: z.string(),
  parameters: JsonValueSchema.optional(),
  /** JSON Schema the decision payload must satisfy when action is resume. */
  responseSchema: JsonObjectSchema.optional(),
  resumeMode: ResumeModeSchema,
  /**
   * When the call stops waiting without a decision, and what happens then (docs/ARCHITECTURE.md,
   * "Timers"). Stored with `at` resolved; absent: it waits until decided or cancelled.
   */
  deadline: TicketDeadlineSchema.optional(),
  /** An event the call waits for (with a required timeout) instead of a person's decision. */
  waitFor: WaitForSchema.optional(),
  /**
   * A durable sleep: the call waits for its deadline only. Written with reason `input`, because
   * 7c7c246 reads only the three older reasons and would take the checkpoint for corrupt; a reason
   * `sleep` (read since this field) is written once no such release can run beside this one
   * (docs/deployment-and-scaling.md, "Upgrading").
   */
  sleep: z.literal(true).optional(),
});
export type SuspendTicket = z.infer<typeof SuspendTicketSchema>;

/** Whether a ticket is a durable sleep, in either of the two ways one is written. */
export function isSleepTicket(ticket: Pick<SuspendTicket, 'reason' | 'sleep'>): boolean {
  return ticket.reason === 'sleep' || ticket.sleep === true;
}

/** What a tool returns (seed: Success / Warning / Error / Pending). */
export const ToolResultSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('success'), output: JsonValueSchema }),
  z.object({ kind: z.literal('warning'), output: JsonValueSchema, message: z.string() }),
  z.object({ kind: z.literal('error'), message: z.string(), code: z.string().optional() }),
  z.object({ kind: z.literal('pending'), ticket: SuspendTicketSchema }),
]);
export type ToolResult = z.infer<typeof ToolResultSchema>;

export const StatePatchSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('set'), key: z.string(), value: JsonValueSchema }),
  z.object({ op: z.literal('delete'), key: z.string() }),
  /** Contribution to a commutative key; combined with the key's reducer. */
  z.object({ op: z.literal('reduce'), key: z.string(), value: JsonValueSchema }),
]);
export type StatePatch = z.infer<typeof StatePatchSchema>;

/** A tool execution's outcome as it crosses from a tool job back to the step. */
export const ToolExecutionResultSchema = z.object({
  toolCallId: z.string(),
  /** Replay generation this result belongs to; stale generations are ignored. */
  attempt: z.number().int().nonnegative(),
  result: ToolResultSchema,
  patches: z.array(StatePatchSchema),
  startedAt: z.number(),
  finishedAt: z.number(),
  /** Set when the result is a child run's end (agent-as-tool). */
  child: ChildRunEndSchema.optional(),
});
export type ToolExecutionResult = z.infer<typeof ToolExecutionResultSchema>;

export const ToolOutcomeSchema = z.object({
  status: z.enum(['succeeded', 'failed', 'cancelled']),
  output: JsonValueSchema.optional(),
  error: z.string().optional(),
  warning: z.string().optional(),
});
export type ToolOutcome = z.infer<typeof ToolOutcomeSchema>;

/** Durable per-call state (seed: __tool_call_scope.<id>). */
export const ToolCallStateSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: JsonObjectSchema,
  step: z.number().int(),
  index: z.number().int(),
  status: ToolCallStatusSchema,
  /** Incremented on each replay; tool jobs and results are keyed by it. */
  attempt: z.number().int().nonnegative(),
  ticket: SuspendTicketSchema.optional(),
  decisionId: z.string().optional(),
  /** Arguments the replay uses (resume mode decides: original args or decision payload). */
  replayArguments: JsonValueSchema.optional(),
  /** Decision payload, exposed to the tool on replay. */
  resumePayload: JsonValueSchema.optional(),
  outcome: ToolOutcomeSchema.optional(),
  /** State patches the tool returned; applied per the execution mode's rules. */
  patches: z.array(StatePatchSchema).optional(),
  /** Whether the replay began while the run was waiting (re-activation) or running. */
  replayOrigin: z.enum(['waiting', 'running']).optional(),
  /** An agent tool's call: the child run its execution is (set when the call starts running). */
  child: ChildRunRefSchema.optional(),
  createdAt: z.number(),
  startedAt: z.number().optional(),
  completedAt: z.number().optional(),
});
export type ToolCallState = z.infer<typeof ToolCallStateSchema>;

/** A tool as advertised to models and API callers. */
export const ToolDescriptorSchema = z.object({
  name: z.string(),
  description: z.string(),
  inputSchema: JsonObjectSchema,
  approval: z.boolean(),
  clientSide: z.boolean(),
  /** An agent tool: calling it starts a child run of this agent. */
  childAgent: z.string().optional(),
});
export type ToolDescriptor = z.infer<typeof ToolDescriptorSchema>;
