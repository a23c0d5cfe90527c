import { z } from 'zod';
import { DecisionReplayPolicySchema, ExecutionModeSchema } from './enums.ts';
import { JsonValueSchema } from './json.ts';
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

/** What a worker advertises about an agent it can run: data only, no code. */
export const AgentDescriptorSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  executionMode: ExecutionModeSchema,
  replayPolicy: DecisionReplayPolicySchema.optional(),
  stopConditions: z.array(StopConditionSchema),
  stateKeys: z.array(StateKeySpecSchema),
  tools: z.array(ToolDescriptorSchema),
  /** Workers that advertised it recently. */
  workers: z.array(z.string()),
  updatedAt: z.number(),
});
export type AgentDescriptor = z.infer<typeof AgentDescriptorSchema>;
