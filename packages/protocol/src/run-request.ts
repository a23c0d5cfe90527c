import { z } from 'zod';
import {
  DecisionReplayPolicySchema,
  ExecutionModeSchema,
  MultitaskStrategySchema,
} from './enums.ts';
import { DeadlinePolicySchema } from './deadlines.ts';
import { FairnessKeySchema, RunPrioritySchema } from './fairness.ts';
import { InputMessageSchema } from './messages.ts';
import { StopConditionsSchema } from './stop-conditions.ts';
import { RunWebhookRequestSchema } from './webhooks.ts';

export const MAX_INPUT_MESSAGES = 100;

const idSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'may only contain letters, digits, ".", "_", ":" and "-"');

export const RunOptionsSchema = z.strictObject({
  executionMode: ExecutionModeSchema.optional().describe(
    "How the run executes tool calls and decisions; default: the agent's mode.",
  ),
  /** Overrides the mode's default policy (parallel modes only). */
  replayPolicy: DecisionReplayPolicySchema.optional().describe(
    "When resumed tool calls replay (parallel modes only); default: the mode's policy.",
  ),
  stopConditions: StopConditionsSchema.optional().describe(
    'Conditions that end the run early (step, token, time budgets, loop detection, content).',
  ),
  multitask: MultitaskStrategySchema.optional().describe(
    'What happens when the thread already has an active run (reject, enqueue, interrupt…).',
  ),
  priority: RunPrioritySchema.optional().describe(
    'Dispatch priority, 1 (first) to 5 (last); default 3. Every job of the run and its child runs carry it.',
  ),
  fairnessKey: FairnessKeySchema.optional().describe(
    "Whom the run is fair to within its tenant (e.g. your own end user's id); default: the tenant. Runs of one priority share the workers across keys by weight.",
  ),
  deadline: DeadlinePolicySchema.optional().describe(
    "Default deadline for this run's waiting calls (approvals, client tools) whose tool sets none: timeout and outcome (deny, resume, cancel, escalate); default: the agent's, else none.",
  ),
  /** Keys starting with "baton." are Baton's (e.g. baton.scheduleId on a scheduled run). */
  metadata: z
    .record(z.string().max(64), z.string().max(1024))
    .superRefine((metadata, ctx) => {
      for (const key of Object.keys(metadata))
        if (key.startsWith('baton.'))
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: 'keys starting with "baton." are reserved for Baton; rename the key',
          });
    })
    .optional()
    .describe('String labels kept with the run; keys starting with "baton." are reserved.'),
});
export type RunOptions = z.infer<typeof RunOptionsSchema>;

export const CreateRunRequestSchema = z.strictObject({
  agent: z
    .string()
    .min(1)
    .max(128)
    .describe('Name of the agent to run (GET /v1/agents lists them).'),
  threadId: idSchema
    .optional()
    .describe("Thread to continue (its conversation is the run's history); default: a new thread."),
  input: z
    .strictObject({
      messages: z
        .array(InputMessageSchema)
        .min(1)
        .max(MAX_INPUT_MESSAGES)
        .describe('Messages appended to the thread before the run starts.'),
    })
    .describe('What the run starts from.'),
  options: RunOptionsSchema.optional().describe("Per-run settings; unset ones take the agent's."),
  /** Where to send this run's webhooks (see webhooks.ts); kept out of the checkpoint and events. */
  webhook: RunWebhookRequestSchema.optional().describe(
    "Where to deliver this run's webhooks (kept out of its checkpoint and events).",
  ),
});
export type CreateRunRequest = z.infer<typeof CreateRunRequestSchema>;

export const IdSchema = idSchema;
