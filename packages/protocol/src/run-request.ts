import { z } from 'zod';
import {
  DecisionReplayPolicySchema,
  ExecutionModeSchema,
  MultitaskStrategySchema,
} from './enums.ts';
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
  executionMode: ExecutionModeSchema.optional(),
  /** Overrides the mode's default policy (parallel modes only). */
  replayPolicy: DecisionReplayPolicySchema.optional(),
  stopConditions: StopConditionsSchema.optional(),
  multitask: MultitaskStrategySchema.optional(),
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
    .optional(),
});
export type RunOptions = z.infer<typeof RunOptionsSchema>;

export const CreateRunRequestSchema = z.strictObject({
  agent: z.string().min(1).max(128),
  threadId: idSchema.optional(),
  input: z.strictObject({
    messages: z.array(InputMessageSchema).min(1).max(MAX_INPUT_MESSAGES),
  }),
  options: RunOptionsSchema.optional(),
  /** Where to send this run's webhooks (see webhooks.ts); kept out of the checkpoint and events. */
  webhook: RunWebhookRequestSchema.optional(),
});
export type CreateRunRequest = z.infer<typeof CreateRunRequestSchema>;

export const IdSchema = idSchema;
