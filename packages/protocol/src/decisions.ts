import { z } from 'zod';
import { JsonValueSchema } from './json.ts';

export const DecisionActionSchema = z.enum(['resume', 'cancel']);
export type DecisionAction = z.infer<typeof DecisionActionSchema>;

/** A human (or client) answer to one suspended tool call. */
export const DecisionSchema = z.object({
  decisionId: z.string().min(1).max(200),
  toolCallId: z.string().min(1).max(200),
  action: DecisionActionSchema,
  payload: JsonValueSchema.optional(),
});
export type Decision = z.infer<typeof DecisionSchema>;

/** As callers send it: decisionId is optional and generated when absent. */
export const DecisionInputSchema = z.strictObject({
  decisionId: z.string().min(1).max(200).optional(),
  /**
   * The run that holds the call, when a decision for a child run's call is sent to an ancestor
   * (agent-as-tool); default: the run itself, else the descendant whose call has this id.
   */
  runId: z.string().min(1).max(128).optional(),
  toolCallId: z.string().min(1).max(200),
  action: DecisionActionSchema,
  payload: JsonValueSchema.optional(),
});
export type DecisionInput = z.infer<typeof DecisionInputSchema>;

export const MAX_DECISIONS_PER_REQUEST = 100;

export const SubmitDecisionsRequestSchema = z.strictObject({
  decisions: z.array(DecisionInputSchema).min(1).max(MAX_DECISIONS_PER_REQUEST),
});
export type SubmitDecisionsRequest = z.infer<typeof SubmitDecisionsRequestSchema>;
