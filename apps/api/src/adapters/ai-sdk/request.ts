import type { Decision, InputMessage, JsonValue } from '@baton/protocol';
import { IdSchema } from '@baton/protocol';
import { z } from 'zod';
import {
  asJson,
  badRequest,
  decisionIdFor,
  type DecideCommand,
  type PendingRun,
  type StartRunCommand,
} from '../shared.ts';

/**
 * DefaultChatTransport request body -> Baton command (pure; throws BatonError 'bad_request').
 *
 * The body is `{ id, messages, trigger, messageId, ...body }` where `body` carries custom fields
 * such as `agent`. The chat id is the Baton thread id. Baton keeps the thread's history itself, so
 * only the LAST message matters:
 * - a user message starts a run with that message as input;
 * - an assistant message answers the run waiting on the thread: tool parts in state
 *   'approval-responded' become resume/cancel decisions, and tool parts in state
 *   'output-available' / 'output-error' (client-side tools: UseDecisionAsToolResult) become
 *   resume-with-output / cancel decisions. Only calls the pending run waits on are answered.
 */

const ToolPartSchema = z.looseObject({
  type: z.string(),
  toolCallId: z.string().min(1).max(200),
  toolName: z.string().optional(),
  state: z.string(),
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  errorText: z.string().optional(),
  approval: z
    .looseObject({
      id: z.string().min(1),
      approved: z.boolean().optional(),
      reason: z.string().optional(),
    })
    .optional(),
});
type ToolPart = z.infer<typeof ToolPartSchema>;

/**
 * Parts are checked only as far as Baton reads them (the AI SDK's own part shapes vary between
 * majors), but a part Baton reads must have the AI SDK's type for it: a text part whose text is
 * not a string is refused, not skipped (skipping it started a run without that text).
 */
const UiPartSchema = z.looseObject({ type: z.string() }).superRefine((part, ctx) => {
  const text = (part as { text?: unknown }).text;
  if ((part.type === 'text' || part.type === 'reasoning') && typeof text !== 'string')
    ctx.addIssue({
      code: 'custom',
      message: `a ${part.type} part's text must be a string`,
      path: ['text'],
      input: text,
    });
});

const UiMessageSchema = z.looseObject({
  id: z.string(),
  role: z.enum(['system', 'user', 'assistant']),
  parts: z.array(UiPartSchema),
});
export type UiMessageInput = z.infer<typeof UiMessageSchema>;

export const ChatRequestSchema = z.looseObject({
  id: IdSchema,
  messages: z.array(UiMessageSchema).min(1, 'messages must hold at least the new message'),
  trigger: z.enum(['submit-message', 'regenerate-message']),
  messageId: z.string().optional(),
  agent: z.string().min(1).max(128).optional(),
});
export type ChatRequest = z.infer<typeof ChatRequestSchema>;

export interface AiSdkStartCommand extends StartRunCommand {
  readonly trigger: ChatRequest['trigger'];
}

export interface AiSdkDecideCommand extends DecideCommand {
  /** The assistant UI message being continued: pass it as the stream mapper's messageId. */
  readonly messageId: string;
}

export type AiSdkCommand = AiSdkStartCommand | AiSdkDecideCommand;

export interface RequestToCommandsOptions {
  /** Agent used when the body names none. */
  readonly defaultAgent?: string;
}

function isToolPart(part: { type: string }): boolean {
  return part.type === 'dynamic-tool' || part.type.startsWith('tool-');
}

function issuesText(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
}

function userInput(message: UiMessageInput): InputMessage {
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.type === 'text') {
      const text = (part as { text?: unknown }).text;
      if (typeof text === 'string') texts.push(text);
    } else if (part.type === 'file') {
      throw badRequest(
        'the user message carries a file part; Baton runs take text only: send the file content as text',
      );
    }
  }
  const content = texts.join('\n');
  if (content.trim() === '') throw badRequest('the last user message has no text: add a text part');
  const id = message.id.length >= 1 && message.id.length <= 200 ? { id: message.id } : {};
  return { ...id, role: 'user', content };
}

function payloadOf(value: unknown, what: string): JsonValue {
  const json = asJson(value);
  if (!json.ok) throw badRequest(`${what} is not JSON data: send plain JSON values`);
  return json.value;
}

function decisionFor(
  part: ToolPart,
  call: NonNullable<PendingRun['await']>['calls'][number],
): Decision | null {
  const decisionId = decisionIdFor('ai-sdk', call);
  const base = { decisionId, toolCallId: call.toolCallId };
  switch (part.state) {
    case 'approval-responded': {
      if (part.approval?.approved === undefined)
        throw badRequest(
          `tool part ${part.toolCallId} is approval-responded but has no approval.approved`,
        );
      if (part.approval.approved) return { ...base, action: 'resume' };
      return {
        ...base,
        action: 'cancel',
        ...(part.approval.reason !== undefined
          ? { payload: { reason: part.approval.reason } }
          : {}),
      };
    }
    case 'output-available':
      return {
        ...base,
        action: 'resume',
        payload: payloadOf(part.output ?? null, `output of tool call ${part.toolCallId}`),
      };
    case 'output-error':
      return {
        ...base,
        action: 'cancel',
        payload: { error: part.errorText ?? 'client tool failed' },
      };
    case 'output-denied':
      return { ...base, action: 'cancel' };
    default:
      return null; // still awaiting the user / the client
  }
}

/**
 * Maps a DefaultChatTransport body to a Baton command. `pendingRun` is the run waiting on the
 * thread (status 'waiting'), if any; it is required to answer tool calls.
 */
export function requestToCommands(
  body: unknown,
  pendingRun?: PendingRun | null,
  opts: RequestToCommandsOptions = {},
): AiSdkCommand {
  const parsed = ChatRequestSchema.safeParse(body);
  if (!parsed.success)
    throw badRequest(`invalid chat request: ${issuesText(parsed.error)}`, {
      issues: parsed.error.issues,
    });
  const request = parsed.data;
  const last = request.messages[request.messages.length - 1]!;

  if (last.role === 'user') {
    const agent = request.agent ?? opts.defaultAgent;
    if (agent === undefined)
      throw badRequest(
        'no agent named: add `agent` to the request body (DefaultChatTransport `body: { agent }`)',
      );
    return {
      kind: 'start',
      threadId: request.id,
      agent,
      input: [userInput(last)],
      trigger: request.trigger,
    };
  }

  if (last.role === 'system')
    throw badRequest('the last message is a system message: end the request with a user message');

  // An assistant message: it answers the waiting run's tool calls.
  const awaited = pendingRun?.await?.calls ?? [];
  if (pendingRun == null || awaited.length === 0)
    throw badRequest(
      `no run is waiting on thread ${request.id}: send a user message to start a run (an assistant message only answers pending tool calls)`,
    );
  const byId = new Map(awaited.map((c) => [c.toolCallId, c]));
  const decisions: Decision[] = [];
  for (const raw of last.parts) {
    if (!isToolPart(raw)) continue;
    const part = ToolPartSchema.safeParse(raw);
    if (!part.success) throw badRequest(`invalid tool part: ${issuesText(part.error)}`);
    const call = byId.get(part.data.toolCallId);
    if (call === undefined) continue; // answered earlier or not waiting: nothing to decide
    const decision = decisionFor(part.data, call);
    if (decision !== null) decisions.push(decision);
  }
  if (decisions.length === 0)
    throw badRequest(
      `the last assistant message answers none of the pending tool calls (${[...byId.keys()].join(', ')}): ` +
        'respond to the approval (addToolApprovalResponse) or add the tool output (addToolOutput) first',
    );
  return {
    kind: 'decide',
    threadId: request.id,
    runId: pendingRun.runId,
    decisions,
    messageId: last.id,
  };
}
