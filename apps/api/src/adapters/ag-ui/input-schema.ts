import { z } from 'zod';

/**
 * AG-UI's RunAgentInput as @ag-ui/core 1.x validates it (its RunAgentInputSchema), rewritten here
 * so the adapter keeps no runtime dependency on @ag-ui/core. Every field of the input is checked
 * before a run starts: an input AG-UI itself would refuse is the client's bug (400
 * validation_failed naming the field), not a RUN_ERROR after the run was accepted. Baton adds
 * that threadId, runId and a resume entry's interruptId are not empty. input-schema.test.ts
 * checks that every input @ag-ui/core refuses is refused here too.
 */

const notNull = (what: string) =>
  z.any().refine((value) => value !== null, { error: `${what} must not be null` });

/** A JSON object (not an array, not null). */
const MetadataSchema = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { error: 'must be an object' },
);

const TextPartSchema = z.looseObject({
  type: z.literal('text'),
  id: z.string().optional(),
  text: z.string(),
  metadata: notNull('metadata').optional(),
});

const PartSourceSchema = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('data'), value: z.string(), mimeType: z.string() }),
    z.looseObject({ type: z.literal('url'), value: z.string(), mimeType: z.string().optional() }),
    z.looseObject({
      type: z.literal('file'),
      value: z.string(),
      provider: z.string().optional(),
      mimeType: z.string().optional(),
    }),
  ],
  { error: 'source.type must be "data", "url" or "file"' },
);

const mediaPart = <T extends string>(type: T) =>
  z.looseObject({
    type: z.literal(type),
    id: z.string().optional(),
    source: PartSourceSchema,
    metadata: notNull('metadata').optional(),
  });

const ContentPartSchema = z.discriminatedUnion(
  'type',
  [
    TextPartSchema,
    mediaPart('image'),
    mediaPart('audio'),
    mediaPart('video'),
    mediaPart('document'),
  ],
  { error: 'a content part needs type "text", "image", "audio", "video" or "document"' },
);

const ContentPartsSchema = z.array(ContentPartSchema);

/**
 * A user or tool message's content: a string, or an array of content parts. Not a z.union, whose
 * error on a bad array is a bare "Invalid input": a bad part is named by its own path.
 */
const ContentSchema = z
  .custom<string | z.output<typeof ContentPartsSchema>>(
    (value) => typeof value === 'string' || Array.isArray(value),
    {
      error:
        'content must be a string or an array of content parts ({"type":"text","text":"…"}, …)',
    },
  )
  .superRefine((value, ctx) => {
    if (typeof value === 'string') return;
    const parsed = ContentPartsSchema.safeParse(value);
    if (!parsed.success)
      for (const issue of parsed.error.issues)
        ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path, input: value });
  });

const base = {
  subagentRunId: z.string().optional(),
  id: z.string(),
  encryptedValue: z.string().optional(),
  metadata: MetadataSchema.optional(),
};

const ToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
  encryptedValue: z.string().optional(),
  metadata: MetadataSchema.optional(),
});

const MessageSchema = z.discriminatedUnion(
  'role',
  [
    z.looseObject({
      ...base,
      role: z.literal('developer'),
      name: z.string().optional(),
      content: z.string(),
    }),
    z.looseObject({
      ...base,
      role: z.literal('system'),
      name: z.string().optional(),
      content: z.string(),
    }),
    z.looseObject({
      ...base,
      role: z.literal('assistant'),
      name: z.string().optional(),
      content: z.string().optional(),
      toolCalls: z.array(ToolCallSchema).optional(),
    }),
    z.looseObject({
      ...base,
      role: z.literal('user'),
      name: z.string().optional(),
      content: ContentSchema,
    }),
    z.looseObject({
      ...base,
      role: z.literal('tool'),
      content: ContentSchema,
      toolCallId: z.string(),
      error: z.string().optional(),
    }),
    z.looseObject({
      ...base,
      role: z.literal('activity'),
      activityType: z.string(),
      content: MetadataSchema,
    }),
    z.looseObject({ ...base, role: z.literal('reasoning'), content: z.string() }),
  ],
  {
    error:
      'a message needs role "user", "assistant", "system", "developer", "tool", "activity" or "reasoning"',
  },
);

const ToolSchema = z.looseObject({
  name: z.string(),
  description: z.string(),
  parameters: notNull('parameters').optional(),
  metadata: MetadataSchema.optional(),
});

const ContextSchema = z.looseObject({ description: z.string(), value: z.string() });

const ResumeEntrySchema = z.looseObject({
  interruptId: z.string().min(1),
  status: z.enum(['resolved', 'cancelled']),
  payload: notNull('payload').optional(),
  metadata: MetadataSchema.optional(),
});

export const AgUiRunInputSchema = z.looseObject({
  threadId: z.string().min(1),
  runId: z.string().min(1),
  protocolVersion: z.string().optional(),
  parentRunId: z.string().optional(),
  state: z.unknown().optional(),
  messages: z.array(MessageSchema),
  tools: z.array(ToolSchema).optional(),
  context: z.array(ContextSchema).optional(),
  forwardedProps: notNull('forwardedProps').optional(),
  resume: z.array(ResumeEntrySchema).optional(),
});
