import { z } from 'zod';
import { JsonObjectSchema, JsonValueSchema } from './json.ts';

export const ToolCallRefSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  arguments: JsonObjectSchema,
});
export type ToolCallRef = z.infer<typeof ToolCallRefSchema>;

export const SystemMessageSchema = z.object({
  id: z.string(),
  role: z.literal('system'),
  content: z.string(),
});
export const UserMessageSchema = z.object({
  id: z.string(),
  role: z.literal('user'),
  content: z.string(),
});
export const AssistantMessageSchema = z.object({
  id: z.string(),
  role: z.literal('assistant'),
  content: z.string(),
  reasoning: z.string().optional(),
  toolCalls: z.array(ToolCallRefSchema),
});
export const ToolMessageSchema = z.object({
  id: z.string(),
  role: z.literal('tool'),
  toolCallId: z.string(),
  toolName: z.string(),
  content: JsonValueSchema,
  isError: z.boolean(),
});

export const MessageSchema = z.discriminatedUnion('role', [
  SystemMessageSchema,
  UserMessageSchema,
  AssistantMessageSchema,
  ToolMessageSchema,
]);
export type Message = z.infer<typeof MessageSchema>;
export type SystemMessage = z.infer<typeof SystemMessageSchema>;
export type UserMessage = z.infer<typeof UserMessageSchema>;
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
export type ToolMessage = z.infer<typeof ToolMessageSchema>;

/** What a caller may send as run input: ids are optional and assigned by Baton. */
export const InputMessageSchema = z.discriminatedUnion('role', [
  z.strictObject({
    id: z.string().min(1).max(200).optional(),
    role: z.literal('user'),
    content: z.string().min(1, 'content must not be empty').max(200_000),
  }),
  z.strictObject({
    id: z.string().min(1).max(200).optional(),
    role: z.literal('system'),
    content: z.string().min(1).max(200_000),
  }),
]);
export type InputMessage = z.infer<typeof InputMessageSchema>;
