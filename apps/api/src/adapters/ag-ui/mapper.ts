import type {
  JsonObject,
  JsonValue,
  Message,
  RunEvent,
  RunSnapshot,
  StatePatch,
  ToolOutcome,
  Usage,
} from '@baton/protocol';
import { ZERO_USAGE } from '@baton/protocol';
import {
  applyEvent,
  applyPatches,
  buildKeyRegistry,
  emptySnapshot,
  toolMessageId,
  type Reducer,
} from '@baton/core';
import { toolResultContent } from '@baton/core';
import { interruptsFor } from './interrupts.ts';
import type { AgUiEvent, AgUiMessage, AgUiPatchOperation, AgUiTokenUsage } from './types.ts';

/**
 * Baton events -> AG-UI events for ONE AG-UI run (one HTTP response). Pure and deterministic.
 *
 * AG-UI models a suspension as a run that ends with RUN_FINISHED outcome 'interrupt' and a resume
 * as a NEW AG-UI run whose input carries `resume` entries. Baton keeps one run across the
 * suspension, so the resumed AG-UI run streams the same Baton run's later events. `history`
 * primes the mapper with the events an earlier AG-UI run already delivered: they emit nothing but
 * feed the conversation, state and await folds (MESSAGES_SNAPSHOT must hold the whole thread).
 */
export interface AgUiMapperOptions {
  /** AG-UI thread id (the Baton thread id). */
  readonly threadId: string;
  /** AG-UI run id of this request (RunAgentInput.runId), not the Baton run id. */
  readonly runId: string;
  /** Events of the Baton run delivered by earlier AG-UI runs. */
  readonly history?: readonly RunEvent[];
  /** Thread messages from runs before this Baton run (for MESSAGES_SNAPSHOT). */
  readonly threadMessages?: readonly Message[];
  /** State before the first event (flat: state keys are unique across scopes). */
  readonly state?: JsonObject;
  /** State key specs; needed to fold `reduce` patches (their reducer decides the value). */
  readonly stateKeys?: readonly { readonly key: string; readonly reducer?: Reducer }[];
}

export interface AgUiMapper {
  map(event: RunEvent): AgUiEvent[];
  /** Ends the AG-UI run when the event stream stops without run.finished (RUN_ERROR 'incomplete'). */
  end(): AgUiEvent[];
  readonly done: boolean;
  /** The folded conversation, as MESSAGES_SNAPSHOT would send it now. */
  messages(): AgUiMessage[];
  /** The folded state, as STATE_SNAPSHOT would send it now. */
  state(): JsonObject;
}

/** Event timestamp (Baton `at`, epoch ms); absent when no event was seen. */
type At = { timestamp?: number };

const reasoningId = (messageId: string): string => `${messageId}:reasoning`;
const stepName = (step: number): string => `step-${step}`;

function pointer(key: string): string {
  return `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

function contentText(value: JsonValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function toolContent(outcome: ToolOutcome): string {
  return contentText(toolResultContent(outcome));
}

function batonMessage(message: Message): AgUiMessage[] {
  switch (message.role) {
    case 'system':
    case 'user':
      return [{ id: message.id, role: message.role, content: message.content }];
    case 'assistant':
      return [
        ...(message.reasoning
          ? [
              {
                id: reasoningId(message.id),
                role: 'reasoning' as const,
                content: message.reasoning,
              },
            ]
          : []),
        {
          id: message.id,
          role: 'assistant',
          ...(message.content !== '' ? { content: message.content } : {}),
          ...(message.toolCalls.length > 0
            ? {
                toolCalls: message.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function' as const,
                  function: { name: c.name, arguments: JSON.stringify(c.arguments) },
                })),
              }
            : {}),
        },
      ];
    case 'tool':
      return [
        {
          id: message.id,
          role: 'tool',
          toolCallId: message.toolCallId,
          content: contentText(message.content),
          ...(message.isError ? { error: errorOf(message.content) } : {}),
        },
      ];
  }
}

function errorOf(content: JsonValue): string {
  if (
    content !== null &&
    typeof content === 'object' &&
    !Array.isArray(content) &&
    typeof content['error'] === 'string'
  )
    return content['error'];
  return contentText(content);
}

function tokenUsage(total: Usage, base: Usage): AgUiTokenUsage[] {
  const inputTokens = Math.max(0, total.inputTokens - base.inputTokens);
  const outputTokens = Math.max(0, total.outputTokens - base.outputTokens);
  return [{ inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }];
}

export function createAgUiMapper(opts: AgUiMapperOptions): AgUiMapper {
  const { threadId, runId } = opts;
  let started = false;
  let done = false;
  let snapshot: RunSnapshot | null = null;
  let openStep: string | null = null;
  const openText = new Set<string>();
  const openReasoning = new Set<string>();
  const streamedText = new Set<string>();
  const streamedReasoning = new Set<string>();
  /** Tool call id -> the assistant message that holds it (TOOL_CALL_START.parentMessageId). */
  const parentOf = new Map<string, string>();
  const conversation: AgUiMessage[] = (opts.threadMessages ?? []).flatMap(batonMessage);
  let state: JsonObject = { ...(opts.state ?? {}) };
  const reducers = new Map((opts.stateKeys ?? []).map((k) => [k.key, k.reducer]));
  let baseUsage: Usage = ZERO_USAGE;

  function upsert(message: AgUiMessage): void {
    const i = conversation.findIndex((m) => m.id === message.id);
    if (i >= 0) conversation[i] = message;
    else conversation.push(message);
  }

  /** Applies Baton patches to the flat state and returns the equivalent JSON Patch. */
  function patchState(patches: readonly StatePatch[]): AgUiPatchOperation[] {
    const ops: AgUiPatchOperation[] = [];
    for (const patch of patches) {
      const path = pointer(patch.key);
      if (patch.op === 'set') {
        ops.push({ op: 'add', path, value: patch.value });
        state = { ...state, [patch.key]: patch.value };
      } else if (patch.op === 'delete') {
        if (!Object.hasOwn(state, patch.key)) continue;
        ops.push({ op: 'remove', path });
        const { [patch.key]: _removed, ...rest } = state;
        state = rest;
      } else {
        const reducer = reducers.get(patch.key);
        if (reducer === undefined) continue; // cannot fold a contribution without its reducer
        const registry = buildKeyRegistry([
          { key: patch.key, scope: 'run', merge: 'commutative', reducer },
        ]);
        const current = state[patch.key];
        const next = applyPatches(
          registry,
          { run: current === undefined ? {} : { [patch.key]: current }, thread: {} },
          [patch],
        ).run[patch.key];
        if (next === undefined) continue;
        ops.push({ op: 'add', path, value: next });
        state = { ...state, [patch.key]: next };
      }
    }
    return ops;
  }

  /** Folds an event into the conversation / state / await views; returns state ops for live use. */
  function fold(event: RunEvent): AgUiPatchOperation[] {
    snapshot = applyEvent(snapshot ?? emptySnapshot(event), event);
    switch (event.type) {
      case 'message.input':
        for (const m of batonMessage(event.message)) upsert(m);
        return [];
      case 'message.assistant':
        for (const call of event.message.toolCalls) parentOf.set(call.id, event.message.id);
        for (const m of batonMessage(event.message)) upsert(m);
        return [];
      case 'tool_call.result': {
        const id = toolMessageId(event.runId, event.toolCallId);
        const content = toolContent(event.outcome);
        upsert({
          id,
          role: 'tool',
          toolCallId: event.toolCallId,
          content,
          ...(event.outcome.status !== 'succeeded'
            ? { error: errorOf(toolResultContent(event.outcome)) }
            : {}),
        });
        return [];
      }
      case 'state.delta':
        return patchState(event.patches);
      case 'run.finished':
        baseUsage = event.usage;
        return [];
      default:
        return [];
    }
  }
  for (const event of opts.history ?? []) fold(event);
  const historyUsage = baseUsage;

  const ts = (event: RunEvent): At => ({ timestamp: event.at });

  function closeMessage(messageId: string, at: At, out: AgUiEvent[]): void {
    const rid = reasoningId(messageId);
    if (openReasoning.delete(rid)) {
      out.push(
        { type: 'REASONING_MESSAGE_END', messageId: rid, ...at },
        { type: 'REASONING_END', messageId: rid, ...at },
      );
    }
    if (openText.delete(messageId)) out.push({ type: 'TEXT_MESSAGE_END', messageId, ...at });
  }

  function closeAll(at: At, out: AgUiEvent[]): void {
    const ids = new Set([
      ...[...openReasoning].map((r) => r.slice(0, -':reasoning'.length)),
      ...openText,
    ]);
    for (const id of ids) closeMessage(id, at, out);
  }

  function closeStep(at: At, out: AgUiEvent[]): void {
    closeAll(at, out);
    if (openStep !== null) out.push({ type: 'STEP_FINISHED', stepName: openStep, ...at });
    openStep = null;
  }

  function snapshots(at: At, out: AgUiEvent[]): void {
    out.push(
      { type: 'STATE_SNAPSHOT', snapshot: { ...state }, ...at },
      { type: 'MESSAGES_SNAPSHOT', messages: [...conversation], ...at },
    );
  }

  function finish(event: Extract<RunEvent, { type: 'run.finished' }>, out: AgUiEvent[]): void {
    const at = ts(event);
    closeStep(at, out);
    const { termination } = event;
    const usage = tokenUsage(event.usage, historyUsage);
    const metadata = { baton: { runId: event.runId, status: event.status, termination } };
    if (termination.kind === 'error') {
      out.push({
        type: 'RUN_ERROR',
        message: termination.message,
        code: 'run_error',
        usage,
        metadata,
        ...at,
      });
    } else if (event.status === 'waiting') {
      const interrupts = interruptsFor(snapshot?.await);
      snapshots(at, out);
      out.push({
        type: 'RUN_FINISHED',
        threadId,
        runId,
        outcome: interrupts.length > 0 ? { type: 'interrupt', interrupts } : { type: 'success' },
        usage,
        metadata,
        ...at,
      });
    } else {
      out.push({
        type: 'RUN_FINISHED',
        threadId,
        runId,
        outcome: termination.kind === 'cancelled' ? { type: 'cancelled' } : { type: 'success' },
        usage,
        metadata,
        ...at,
      });
    }
    done = true;
  }

  function translate(event: RunEvent, stateOps: AgUiPatchOperation[], out: AgUiEvent[]): void {
    const at = ts(event);
    switch (event.type) {
      case 'step.started':
        if (openStep !== null) closeStep(at, out);
        openStep = stepName(event.step);
        out.push({ type: 'STEP_STARTED', stepName: openStep, ...at });
        return;
      case 'step.finished':
        if (openStep === stepName(event.step)) closeStep(at, out);
        else closeAll(at, out);
        return;
      case 'text.delta':
        if (event.delta === '') return;
        if (!openText.has(event.messageId)) {
          openText.add(event.messageId);
          out.push({
            type: 'TEXT_MESSAGE_START',
            messageId: event.messageId,
            role: 'assistant',
            ...at,
          });
        }
        streamedText.add(event.messageId);
        out.push({
          type: 'TEXT_MESSAGE_CONTENT',
          messageId: event.messageId,
          delta: event.delta,
          ...at,
        });
        return;
      case 'reasoning.delta': {
        if (event.delta === '') return;
        const rid = reasoningId(event.messageId);
        if (!openReasoning.has(rid)) {
          openReasoning.add(rid);
          out.push(
            { type: 'REASONING_START', messageId: rid, ...at },
            { type: 'REASONING_MESSAGE_START', messageId: rid, role: 'reasoning', ...at },
          );
        }
        streamedReasoning.add(event.messageId);
        out.push({ type: 'REASONING_MESSAGE_CONTENT', messageId: rid, delta: event.delta, ...at });
        return;
      }
      case 'inference.reset':
        // AG-UI cannot retract streamed text: close it, then resynchronise the client with a
        // MESSAGES_SNAPSHOT of the committed conversation (which never held the partial message).
        if (!streamedText.has(event.messageId) && !streamedReasoning.has(event.messageId)) return;
        closeMessage(event.messageId, at, out);
        streamedText.delete(event.messageId);
        streamedReasoning.delete(event.messageId);
        out.push({ type: 'MESSAGES_SNAPSHOT', messages: [...conversation], ...at });
        return;
      case 'message.assistant': {
        const { message } = event;
        if (message.reasoning && !streamedReasoning.has(message.id)) {
          const rid = reasoningId(message.id);
          out.push(
            { type: 'REASONING_START', messageId: rid, ...at },
            { type: 'REASONING_MESSAGE_START', messageId: rid, role: 'reasoning', ...at },
            { type: 'REASONING_MESSAGE_CONTENT', messageId: rid, delta: message.reasoning, ...at },
            { type: 'REASONING_MESSAGE_END', messageId: rid, ...at },
            { type: 'REASONING_END', messageId: rid, ...at },
          );
        }
        if (message.content !== '' && !streamedText.has(message.id)) {
          out.push(
            { type: 'TEXT_MESSAGE_START', messageId: message.id, role: 'assistant', ...at },
            { type: 'TEXT_MESSAGE_CONTENT', messageId: message.id, delta: message.content, ...at },
            { type: 'TEXT_MESSAGE_END', messageId: message.id, ...at },
          );
        }
        closeMessage(message.id, at, out);
        return;
      }
      case 'tool_call.created': {
        closeAll(at, out);
        const parent = parentOf.get(event.toolCallId);
        out.push(
          {
            type: 'TOOL_CALL_START',
            toolCallId: event.toolCallId,
            toolCallName: event.toolName,
            ...(parent !== undefined ? { parentMessageId: parent } : {}),
            ...at,
          },
          {
            type: 'TOOL_CALL_ARGS',
            toolCallId: event.toolCallId,
            delta: JSON.stringify(event.arguments),
            ...at,
          },
          { type: 'TOOL_CALL_END', toolCallId: event.toolCallId, ...at },
        );
        return;
      }
      case 'tool_call.result':
        // Also the only event a resumed (tool-bound) call produces: the result of the ORIGINAL
        // call id, whose START/ARGS/END went out with the interrupted AG-UI run.
        closeAll(at, out);
        out.push({
          type: 'TOOL_CALL_RESULT',
          messageId: toolMessageId(event.runId, event.toolCallId),
          toolCallId: event.toolCallId,
          content: toolContent(event.outcome),
          role: 'tool',
          ...at,
        });
        return;
      case 'state.delta':
        if (stateOps.length > 0) out.push({ type: 'STATE_DELTA', delta: stateOps, ...at });
        return;
      case 'run.finished':
        finish(event, out);
        return;
      case 'run.created':
      case 'run.started':
      case 'run.status':
      case 'message.input':
      case 'phase':
      case 'tool_call.status':
      case 'tool_call.deadline_expired':
      case 'tool_call.deadline_escalated':
      case 'tool_call.suspended':
      case 'decision.applied':
      case 'decision.discarded':
      case 'child_run.linked':
      case 'child_run.finished':
      case 'run.cancel_requested':
      case 'state.conflict':
      case 'model.retry':
        // A retry is visible only through the reset it causes (AG-UI has no event for it).
        return;
    }
  }

  function begin(timestamp: number | undefined, out: AgUiEvent[]): void {
    if (started) return;
    started = true;
    out.push({
      type: 'RUN_STARTED',
      threadId,
      runId,
      ...(timestamp !== undefined ? { timestamp } : {}),
    });
  }

  return {
    map(event) {
      if (done) return [];
      const out: AgUiEvent[] = [];
      begin(event.at, out);
      const ops = fold(event);
      translate(event, ops, out);
      return out;
    },
    end() {
      if (done) return [];
      const out: AgUiEvent[] = [];
      begin(undefined, out);
      const at: At = snapshot === null ? {} : { timestamp: snapshot.updatedAt };
      closeStep(at, out);
      out.push({
        type: 'RUN_ERROR',
        message: 'the event stream ended before the run finished or suspended',
        code: 'incomplete',
        ...at,
      });
      done = true;
      return out;
    },
    get done() {
      return done;
    },
    messages: () => [...conversation],
    state: () => ({ ...state }),
  };
}
