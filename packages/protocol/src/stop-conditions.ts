import { z } from 'zod';
import { compileContentPattern } from './content-pattern.ts';

const positiveInt = z.number().int().positive();

/** Declarative stop conditions, evaluated at StepEnd. */
export const StopConditionSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('max_rounds'), rounds: positiveInt }),
  z.strictObject({ type: z.literal('timeout'), seconds: z.number().positive() }),
  z.strictObject({ type: z.literal('token_budget'), maxTotal: positiveInt }),
  z.strictObject({ type: z.literal('consecutive_errors'), max: positiveInt }),
  z.strictObject({ type: z.literal('stop_on_tool'), toolName: z.string().min(1) }),
  z
    .strictObject({
      type: z.literal('content_match'),
      /** RE2 syntax (linear-time matching); see content-pattern.ts for the limits. */
      pattern: z.string().min(1),
      flags: z
        .string()
        .max(4)
        .regex(/^[imsu]*$/, 'flags may only contain i, m, s, u')
        .optional(),
    })
    .superRefine((c, ctx) => {
      const compiled = compileContentPattern(c.pattern, c.flags);
      if (!compiled.ok)
        ctx.addIssue({ code: 'custom', path: ['pattern'], message: compiled.message });
    }),
  z.strictObject({
    type: z.literal('loop_detection'),
    /** How many of the most recent tool calls are compared. */
    window: z.number().int().min(2).max(1_000),
    /** How many identical calls inside the window count as a loop (default 2). */
    threshold: z.number().int().min(2).max(1_000).optional(),
  }),
]);
export type StopCondition = z.infer<typeof StopConditionSchema>;
export type StopConditionType = StopCondition['type'];

export const StopConditionsSchema = z.array(StopConditionSchema).max(20);
