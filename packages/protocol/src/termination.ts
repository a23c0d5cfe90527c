import { z } from 'zod';

export const TerminationReasonSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('natural_end') }),
  z.object({ kind: z.literal('behavior_requested') }),
  z.object({ kind: z.literal('stopped'), code: z.string(), detail: z.string().optional() }),
  z.object({ kind: z.literal('cancelled') }),
  z.object({ kind: z.literal('blocked'), reason: z.string() }),
  z.object({ kind: z.literal('suspended') }),
  z.object({ kind: z.literal('error'), message: z.string() }),
]);
export type TerminationReason = z.infer<typeof TerminationReasonSchema>;
export type TerminationKind = TerminationReason['kind'];
