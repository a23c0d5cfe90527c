import type { Decision, InputMessage } from '@baton/protocol';
import { IdSchema } from '@baton/protocol';
import {
  asJson,
  decisionIdFor,
  type DecideCommand,
  type PendingRun,
  type StartRunCommand,
} from '../shared.ts';
import { AgUiRunInputSchema } from './input-schema.ts';
import { interruptsFor } from './interrupts.ts';
import type { AgUiEventOf } from './types.ts';

/**
 * AG-UI RunAgentInput -> Baton command (pure). Never throws: a request AG-UI cannot serve becomes
 * `{ kind: 'error' }`, which the route streams as a RUN_ERROR (see `runErrorFor`).
 *
 * - A run waits on the thread with pending interrupts: the input must carry `resume` entries;
 *   each entry answers the interrupt (= tool call) it names: resolved -> resume with its payload,
 *   cancelled -> cancel. An input without resume is an error (AG-UI: a thread with pending
 *   interrupts continues only by answering them). Entries may answer a subset; the run keeps
 *   waiting for the rest and the next RUN_FINISHED interrupts with what is left.
 * - No run waits: resume entries are an error; otherwise the last message must be a user message,
 *   which starts a run (Baton keeps the thread history, so earlier messages are not re-sent).
 */

export { AgUiRunInputSchema };

export type AgUiErrorCode =
  | 'bad_request'
  | 'interrupts_pending'
  | 'unknown_interrupt'
  | 'no_pending_interrupts'
  | 'no_user_message'
  | 'unknown_agent';

export interface AgUiStartCommand extends StartRunCommand {
  /** The AG-UI run id of the request (RUN_STARTED / RUN_FINISHED carry it). */
  readonly protocolRunId: string;
}
export interface AgUiDecideCommand extends DecideCommand {
  readonly protocolRunId: string;
}
export interface AgUiErrorCommand {
  readonly kind: 'error';
  readonly code: AgUiErrorCode;
  readonly message: string;
  readonly threadId?: string;
  readonly protocolRunId?: string;
}
export type AgUiCommand = AgUiStartCommand | AgUiDecideCommand | AgUiErrorCommand;

export interface InputToCommandsOptions {
  /** Agent to run (e.g. from the route); else forwardedProps.agent is used. */
  readonly agent?: string;
}

function fail(
  code: AgUiErrorCode,
  message: string,
  ids: { threadId?: string; protocolRunId?: string } = {},
): AgUiErrorCommand {
  return { kind: 'error', code, message, ...ids };
}

function textOf(content: unknown): string | { error: string } {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return { error: 'the user message has no content' };
  const texts: string[] = [];
  for (const part of content as unknown[]) {
    const p = part as { type?: unknown; text?: unknown };
    if (p?.type === 'text' && typeof p.text === 'string') texts.push(p.text);
    else
      return {
        error: `the user message carries a ${String(p?.type)} part; Baton runs take text only`,
      };
  }
  return texts.join('\n');
}

/** Maps a RunAgentInput to a command; `pending` is the run waiting on the thread, if any. */
export function inputToCommands(
  input: unknown,
  pending: PendingRun | null,
  opts: InputToCommandsOptions = {},
): AgUiCommand {
  const parsed = AgUiRunInputSchema.safeParse(input);
  if (!parsed.success)
    return fail(
      'bad_request',
      `invalid RunAgentInput: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ')}`,
    );
  const run = parsed.data;
  const ids = { threadId: run.threadId, protocolRunId: run.runId };
  const threadId = IdSchema.safeParse(run.threadId);
  if (!threadId.success)
    return fail(
      'bad_request',
      `threadId ${threadId.error.issues[0]?.message ?? 'is invalid'}`,
      ids,
    );
  const resume = run.resume ?? [];
  const interrupts = interruptsFor(pending?.await);

  if (pending != null && interrupts.length > 0) {
    if (resume.length === 0)
      return fail(
        'interrupts_pending',
        `thread ${run.threadId} has ${interrupts.length} pending interrupt(s) (${interrupts.map((i) => i.id).join(', ')}): ` +
          'send a resume entry (resolved or cancelled) for each before starting anything new',
        ids,
      );
    const calls = new Map((pending.await?.calls ?? []).map((c) => [c.toolCallId, c]));
    const seen = new Set<string>();
    const decisions: Decision[] = [];
    for (const entry of resume) {
      const call = calls.get(entry.interruptId);
      if (call === undefined)
        return fail(
          'unknown_interrupt',
          `resume entry ${entry.interruptId} answers no pending interrupt (pending: ${[...calls.keys()].join(', ')})`,
          ids,
        );
      if (seen.has(entry.interruptId))
        return fail('bad_request', `interrupt ${entry.interruptId} is answered twice`, ids);
      seen.add(entry.interruptId);
      const base = { decisionId: decisionIdFor('ag-ui', call), toolCallId: call.toolCallId };
      if (entry.status === 'cancelled') {
        decisions.push({ ...base, action: 'cancel' });
        continue;
      }
      if (entry.payload === undefined) {
        decisions.push({ ...base, action: 'resume' });
        continue;
      }
      const payload = asJson(entry.payload);
      if (!payload.ok)
        return fail(
          'bad_request',
          `payload for interrupt ${entry.interruptId} is not JSON data`,
          ids,
        );
      decisions.push({ ...base, action: 'resume', payload: payload.value });
    }
    return {
      kind: 'decide',
      threadId: threadId.data,
      runId: pending.runId,
      decisions,
      protocolRunId: run.runId,
    };
  }

  if (resume.length > 0)
    return fail(
      'no_pending_interrupts',
      `thread ${run.threadId} has no pending interrupts: drop \`resume\` and send a user message`,
      ids,
    );
  const last = run.messages[run.messages.length - 1];
  if (last === undefined || last.role !== 'user')
    return fail(
      'no_user_message',
      "the last message must be a user message: it becomes the new run's input",
      ids,
    );
  const content = textOf(last.content);
  if (typeof content !== 'string') return fail('bad_request', content.error, ids);
  if (content.trim() === '') return fail('bad_request', 'the last user message is empty', ids);
  const forwarded = run.forwardedProps as { agent?: unknown } | undefined;
  const agent = opts.agent ?? (typeof forwarded?.agent === 'string' ? forwarded.agent : undefined);
  if (agent === undefined || agent === '')
    return fail(
      'unknown_agent',
      'no agent named: pass forwardedProps.agent (or use an agent-specific endpoint)',
      ids,
    );
  const message: InputMessage = {
    ...(last.id.length >= 1 && last.id.length <= 200 ? { id: last.id } : {}),
    role: 'user',
    content,
  };
  return {
    kind: 'start',
    threadId: threadId.data,
    agent,
    input: [message],
    protocolRunId: run.runId,
  };
}

/** The RUN_ERROR event that reports an error command (valid as the first and only event). */
export function runErrorFor(command: AgUiErrorCommand): AgUiEventOf<'RUN_ERROR'> {
  return { type: 'RUN_ERROR', message: command.message, code: command.code };
}
