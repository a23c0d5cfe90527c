import { z } from 'zod';
import { JsonValueSchema } from './json.ts';
import { DecisionSourceSchema } from './waits.ts';

export const DecisionActionSchema = z.enum(['resume', 'cancel']);
export type DecisionAction = z.infer<typeof DecisionActionSchema>;

/** A human (or client) answer to one suspended tool call. */
export const DecisionSchema = z.object({
  decisionId: z
    .string()
    .min(1)
    .max(200)
    .describe('Id of the decision; a repeat with it is a no-op.'),
  toolCallId: z.string().min(1).max(200).describe('The suspended tool call this decision answers.'),
  action: DecisionActionSchema.describe(
    'resume: continue the call with `payload`; cancel: end it.',
  ),
  payload: JsonValueSchema.optional().describe(
    "The answer the tool resumes with; must satisfy the call's responseSchema when it has one.",
  ),
  source: DecisionSourceSchema.optional().describe(
    'Where the decision came from: absent or api (a decisions request), waitpoint, event, timeout.',
  ),
  /** A deadline's deny: why, which becomes the cancelled call's error. */
  reason: z.string().optional().describe("A deadline's deny: why (the cancelled call's error)."),
});
export type Decision = z.infer<typeof DecisionSchema>;

/** As callers send it: decisionId is optional and generated when absent. */
export const DecisionInputSchema = z.strictObject({
  decisionId: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('Id of the decision, so a retried request applies it once; default: generated.'),
  /**
   * The run that holds the call, when a decision for a child run's call is sent to an ancestor
   * (agent-as-tool); default: the run itself, else the descendant whose call has this id.
   */
  runId: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .describe(
      'The run that holds the call when it belongs to a child run; default: found by toolCallId.',
    ),
  toolCallId: z.string().min(1).max(200).describe('The suspended tool call this decision answers.'),
  action: DecisionActionSchema.describe(
    'resume: continue the call with `payload`; cancel: end it.',
  ),
  payload: JsonValueSchema.optional().describe(
    "The answer the tool resumes with; must satisfy the call's responseSchema when it has one.",
  ),
});
export type DecisionInput = z.infer<typeof DecisionInputSchema>;

export const MAX_DECISIONS_PER_REQUEST = 100;

export const SubmitDecisionsRequestSchema = z.strictObject({
  decisions: z
    .array(DecisionInputSchema)
    .min(1)
    .max(MAX_DECISIONS_PER_REQUEST)
    .describe('Answers to suspended tool calls, applied in order.'),
});
export type SubmitDecisionsRequest = z.infer<typeof SubmitDecisionsRequestSchema>;
