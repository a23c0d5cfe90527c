import { z } from 'zod';

const positiveInt = z.number().int().positive();

/** Declarative stop conditions, evaluated at StepEnd. */
export const StopConditionSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('max_rounds'), rounds: positiveInt }),
  z.strictObject({ type: z.literal('timeout'), seconds: z.number().positive() }),
  z.strictObject({ type: z.literal('token_budget'), maxTotal: positiveInt }),
  z.strictObject({ type: z.literal('consecutive_errors'), max: positiveInt }),
  z.strictObject({ type: z.literal('stop_on_tool'), toolName: z.string().min(1) }),
  z.strictObject({
    type: z.literal('content_match'),
    pattern: z
      .string()
      .min(1)
      .refine(isValidRegex, { message: 'pattern is not a valid regular expression' }),
    flags: z
      .string()
      .regex(/^[imsu]*$/, 'flags may only contain i, m, s, u')
      .optional(),
  }),
  z.strictObject({
    type: z.literal('loop_detection'),
    /** How many of the most recent tool calls are compared. */
    window: z.number().int().min(2),
    /** How many identical calls inside the window count as a loop (default 2). */
    threshold: z.number().int().min(2).optional(),
  }),
]);
export type StopCondition = z.infer<typeof StopConditionSchema>;
export type StopConditionType = StopCondition['type'];

export const StopConditionsSchema = z.array(StopConditionSchema).max(20);

function isValidRegex(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}
