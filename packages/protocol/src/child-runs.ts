import { z } from 'zod';
import { RunStatusSchema } from './enums.ts';
import { TerminationReasonSchema } from './termination.ts';

/**
 * Child runs (agent-as-tool; seed: goa-ai run.ChildRunLink / run.Context). A tool call of a
 * parent run may be an agent tool: executing it starts a nested run of another agent whose
 * result becomes the call's tool result.
 */

/** How deep runs may nest (a root run is depth 0): an agent calling itself cannot recurse forever. */
export const MAX_CHILD_DEPTH = 4;

/** Which thread a child run belongs to: the parent's (session inheritance) or a thread of its own. */
export const ChildThreadModeSchema = z.enum(['inherit', 'new']);
export type ChildThreadMode = z.infer<typeof ChildThreadModeSchema>;

/** goa-ai's ChildRunLink: which call of a parent started which nested agent run. */
export const ChildRunLinkSchema = z.object({
  /** The agent tool that started the child run. */
  toolName: z.string(),
  /** The parent's tool call. */
  toolCallId: z.string(),
  childRunId: z.string(),
  /** The agent that executes the child run. */
  childAgentId: z.string(),
  threadId: z.string(),
  /** The parent call's replay generation this child belongs to. */
  attempt: z.number().int().nonnegative(),
});
export type ChildRunLink = z.infer<typeof ChildRunLinkSchema>;

/** What a parent's call records about its child (checkpoint, per call). */
export const ChildRunRefSchema = z.object({
  runId: z.string(),
  agent: z.string(),
  threadId: z.string(),
  thread: ChildThreadModeSchema,
  /** The child's user message, derived from the call's arguments. */
  input: z.string(),
});
export type ChildRunRef = z.infer<typeof ChildRunRefSchema>;

/** A child run's origin (its identity; absent on top-level runs). Seed: run.Context / run.Handle. */
export const RunParentSchema = z.object({
  runId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  agent: z.string(),
  attempt: z.number().int().nonnegative(),
  /** The top-level run of the tree. */
  rootRunId: z.string(),
  /** 1 for a child of a top-level run. */
  depth: z.number().int().positive(),
});
export type RunParent = z.infer<typeof RunParentSchema>;

/** How a child run ended, as its parent's log records it (child_run.finished). */
export const ChildRunEndSchema = z.object({
  runId: z.string(),
  agent: z.string(),
  status: z.literal('done'),
  termination: TerminationReasonSchema,
  /** The parent's tool call the child ran for. */
  toolCallId: z.string(),
});
export type ChildRunEnd = z.infer<typeof ChildRunEndSchema>;

/** A child link as GET /v1/runs/:id shows it: with the child's current status. */
export const ChildRunViewSchema = ChildRunLinkSchema.extend({
  /** null when the child run does not exist (yet, or any more). */
  status: RunStatusSchema.nullable(),
});
export type ChildRunView = z.infer<typeof ChildRunViewSchema>;

/** Run ids of child runs: the parent's id plus the call's position, readable as a tree path. */
export function childRunIdFor(
  parentRunId: string,
  call: { readonly step: number; readonly index: number; readonly attempt: number },
): string {
  const base = `${parentRunId}.s${call.step}c${call.index}`;
  return call.attempt === 0 ? base : `${base}a${call.attempt}`;
}
