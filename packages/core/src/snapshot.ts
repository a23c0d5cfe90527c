import type {
  AwaitedToolCall,
  EventEnvelope,
  EventOf,
  Phase,
  RunEvent,
  RunSnapshot,
  ToolCallSnapshot,
  ToolCallStatus,
  ToolOutcome,
} from '@baton/protocol';
import { ZERO_USAGE, isSleepTicket } from '@baton/protocol';
import { isTerminalCallStatus } from './tool-call-status.ts';

/**
 * Run snapshots are derived, never stored: `foldSnapshot` replays a run's event log and
 * `applyEvent` folds one more event into a snapshot, so a stream consumer keeps an up-to-date
 * view as events arrive. Both are pure: inputs are never mutated and an event at or below the
 * snapshot's `lastSeq` is ignored, so re-delivered or duplicated events are harmless.
 */

const ERROR_SUMMARY_MAX = 200;

/** The snapshot of a run before any event is folded in. */
export function emptySnapshot(
  origin: Pick<EventEnvelope, 'runId' | 'threadId' | 'turnId' | 'at'>,
): RunSnapshot {
  return {
    runId: origin.runId,
    threadId: origin.threadId,
    turnId: origin.turnId,
    agent: '',
    status: 'created',
    phase: null,
    phaseSource: null,
    step: 0,
    executionMode: 'sequential',
    termination: null,
    createdAt: origin.at,
    startedAt: null,
    updatedAt: origin.at,
    finishedAt: null,
    lastSeq: 0,
    lastAssistantMessage: null,
    streaming: null,
    await: null,
    toolCalls: [],
    usage: { ...ZERO_USAGE },
    decisions: [],
    cancelRequested: false,
  };
}

/**
 * Folds a run's event log into its snapshot. Events are taken in seq order (the input is not
 * reordered in place); duplicates and events of other runs are ignored. Folding from `initial`
 * continues an earlier fold. An empty log needs `initial`.
 */
export function foldSnapshot(events: readonly RunEvent[], initial?: RunSnapshot): RunSnapshot {
  const ordered = [...events].sort((a, b) => a.seq - b.seq);
  const first = ordered[0];
  let snapshot = initial;
  if (!snapshot) {
    if (!first) throw new RangeError('foldSnapshot: an empty event log has no run to describe');
    snapshot = emptySnapshot(first);
  }
  for (const event of ordered) snapshot = applyEvent(snapshot, event);
  return snapshot;
}

/** Folds one event into a snapshot, returning a new snapshot (or the same one when ignored). */
export function applyEvent(snapshot: RunSnapshot, event: RunEvent): RunSnapshot {
  if (event.seq <= snapshot.lastSeq || event.runId !== snapshot.runId) return snapshot;
  const s: RunSnapshot = {
    ...snapshot,
    lastSeq: event.seq,
    updatedAt: Math.max(snapshot.updatedAt, event.at),
  };
  switch (event.type) {
    case 'run.created':
      return inferPhase(
        {
          ...s,
          agent: event.agent,
          executionMode: event.executionMode,
          status: 'created',
          createdAt: event.at,
        },
        'run_start',
      );
    case 'run.started':
      return inferPhase(
        {
          ...s,
          agent: event.agent,
          executionMode: event.executionMode,
          startedAt: s.startedAt ?? event.at,
        },
        'run_start',
      );
    case 'run.status':
      // Leaving Waiting resumes the run: the suspension is no longer its termination. A fork
      // that continues a finished run with new input leaves Done the same way.
      return {
        ...s,
        status: event.to,
        ...(event.from !== 'running' && event.to === 'running' ? { termination: null } : {}),
      };
    case 'message.input':
    case 'state.delta':
    case 'state.conflict':
      return s;
    case 'step.started':
      return inferPhase(
        { ...s, step: Math.max(s.step, event.step), streaming: null },
        'step_start',
      );
    case 'phase':
      return { ...s, step: Math.max(s.step, event.step), phase: event.phase, phaseSource: 'event' };
    case 'text.delta':
    case 'reasoning.delta':
      return inferPhase(applyDelta(s, event), 'before_inference');
    case 'model.retry':
      // The retried call's deltas are dropped by the inference.reset that follows, not here:
      // the failed attempt may have streamed nothing.
      return s;
    case 'inference.reset':
      return s.streaming?.messageId === event.messageId ? { ...s, streaming: null } : s;
    case 'message.assistant': {
      const content = event.message.content;
      return inferPhase(
        { ...s, streaming: null, ...(content !== '' ? { lastAssistantMessage: content } : {}) },
        'after_inference',
      );
    }
    case 'tool_call.created':
      return inferPhase(applyCreated(s, event), 'tool_gate');
    case 'tool_call.status':
      return inferPhase(applyCallStatus(s, event), callPhase(event.from, event.to));
    case 'tool_call.suspended':
      return applySuspended(s, event);
    case 'tool_call.result':
      return applyResult(s, event);
    case 'decision.applied':
    case 'decision.discarded':
      return applyDecisionFate(s, event);
    case 'tool_call.deadline_expired':
      return s;
    case 'tool_call.deadline_escalated':
      return applyEscalated(s, event);
    case 'child_run.finished':
      return s;
    case 'child_run.linked':
      return s.childRuns?.some((c) => c.childRunId === event.link.childRunId)
        ? s
        : { ...s, childRuns: [...(s.childRuns ?? []), event.link] };
    case 'run.cancel_requested':
      return { ...s, cancelRequested: true };
    case 'step.finished':
      return inferPhase(
        { ...s, step: Math.max(s.step, event.step), streaming: null, usage: { ...event.usage } },
        'step_end',
      );
    case 'run.finished': {
      const next: RunSnapshot = {
        ...s,
        status: event.status,
        termination: event.termination,
        usage: { ...event.usage },
        streaming: null,
      };
      if (event.status !== 'done') return inferPhase(next, 'after_tool_execute'); // suspended once its round settled
      return inferPhase({ ...next, finishedAt: event.at, await: null }, 'run_end');
    }
  }
}

/** A decision's fate, recorded once: applied, or discarded with the reason. */
function applyDecisionFate(
  s: RunSnapshot,
  event: EventOf<'decision.applied'> | EventOf<'decision.discarded'>,
): RunSnapshot {
  const { decision } = event;
  if (s.decisions.some((d) => d.decisionId === decision.decisionId)) return s;
  const entry = {
    decisionId: decision.decisionId,
    toolCallId: decision.toolCallId,
    action: decision.action,
    at: event.at,
    ...(decision.source !== undefined ? { source: decision.source } : {}),
    ...(event.type === 'decision.discarded' ? { discarded: event.reason } : {}),
  };
  return { ...s, decisions: [...s.decisions, entry] };
}

function inferPhase(s: RunSnapshot, phase: Phase | null): RunSnapshot {
  if (phase === null || s.phaseSource === 'event') return s;
  return { ...s, phase, phaseSource: 'inferred' };
}

/** The phase a tool-call transition reveals: gate outcomes, execution start, or its result. */
function callPhase(from: ToolCallStatus, to: ToolCallStatus): Phase {
  if (to === 'running') return 'before_tool_execute';
  if (to === 'resuming') return 'tool_gate';
  return from === 'running' ? 'after_tool_execute' : 'tool_gate';
}

function applyDelta(
  s: RunSnapshot,
  event: EventOf<'text.delta'> | EventOf<'reasoning.delta'>,
): RunSnapshot {
  const current =
    s.streaming?.messageId === event.messageId
      ? s.streaming
      : { step: event.step, messageId: event.messageId, text: '', reasoning: '' };
  const streaming =
    event.type === 'text.delta'
      ? { ...current, text: current.text + event.delta }
      : { ...current, reasoning: current.reasoning + event.delta };
  return { ...s, step: Math.max(s.step, event.step), streaming };
}

/** Returns a new snapshot whose call `id` is replaced by `update(call)`; unknown calls get a stub. */
function updateCall(
  s: RunSnapshot,
  id: string,
  toolName: string,
  at: number,
  update: (call: ToolCallSnapshot) => ToolCallSnapshot,
): RunSnapshot {
  const i = s.toolCalls.findIndex((c) => c.toolCallId === id);
  if (i >= 0) {
    const toolCalls = [...s.toolCalls];
    toolCalls[i] = update(s.toolCalls[i]!);
    return { ...s, toolCalls };
  }
  // A log read from the middle (or a lost created event): keep what the event tells.
  const stub: ToolCallSnapshot = {
    toolCallId: id,
    toolName,
    step: s.step,
    index: s.toolCalls.filter((c) => c.step === s.step).length,
    arguments: {},
    status: 'new',
    attempt: 0,
    scheduledAt: at,
  };
  return { ...s, toolCalls: [...s.toolCalls, update(stub)] };
}

function applyCreated(s: RunSnapshot, event: EventOf<'tool_call.created'>): RunSnapshot {
  return updateCall(s, event.toolCallId, event.toolName, event.at, (call) => ({
    ...call,
    toolName: event.toolName,
    step: event.step,
    index: event.index,
    arguments: event.arguments,
    scheduledAt: event.at,
  }));
}

function applyCallStatus(s: RunSnapshot, event: EventOf<'tool_call.status'>): RunSnapshot {
  const next = updateCall(s, event.toolCallId, event.toolName, event.at, (call) => ({
    ...call,
    status: event.to,
    ...(event.from === 'suspended' && event.to === 'resuming' ? { attempt: call.attempt + 1 } : {}),
    ...(event.to === 'running' ? { startedAt: event.at } : {}),
    ...(isTerminalCallStatus(event.to) ? { completedAt: event.at } : {}),
  }));
  return event.to === 'suspended' ? next : withoutAwaited(next, event.toolCallId);
}

function applySuspended(s: RunSnapshot, event: EventOf<'tool_call.suspended'>): RunSnapshot {
  const { ticket } = event;
  const awaited: AwaitedToolCall = {
    toolCallId: event.toolCallId,
    toolName: event.toolName,
    reason: isSleepTicket(ticket) ? 'sleep' : ticket.reason,
    message: ticket.message,
    ...(ticket.parameters !== undefined ? { parameters: ticket.parameters } : {}),
    ...(ticket.responseSchema !== undefined ? { responseSchema: ticket.responseSchema } : {}),
    resumeMode: ticket.resumeMode,
    ...(ticket.waitFor !== undefined ? { waitFor: ticket.waitFor } : {}),
    since: event.at,
    ...(ticket.deadline?.at !== undefined
      ? {
          deadline: {
            at: ticket.deadline.at,
            action: ticket.deadline.outcome.action,
            ...(ticket.deadline.escalated ? { escalated: true } : {}),
          },
        }
      : {}),
  };
  const calls = s.await?.calls ?? [];
  const i = calls.findIndex((c) => c.toolCallId === event.toolCallId);
  const nextCalls = i >= 0 ? calls.map((c, j) => (j === i ? awaited : c)) : [...calls, awaited];
  const withStatus = updateCall(s, event.toolCallId, event.toolName, event.at, (call) =>
    call.status === 'suspended' ? call : { ...call, status: 'suspended' },
  );
  return { ...withStatus, await: awaitOf(nextCalls) };
}

/** The await view of these calls; a run whose every awaited call sleeps waits for time. */
function awaitOf(calls: AwaitedToolCall[]): RunSnapshot['await'] {
  if (calls.length === 0) return null;
  const sleeps = calls.every((c) => c.reason === 'sleep' && c.deadline !== undefined);
  if (!sleeps) return { kind: 'tool_calls', calls };
  const until = Math.min(...calls.map((c) => c.deadline?.at ?? Infinity));
  return { kind: 'tool_calls', calls, waitingFor: { kind: 'time', until } };
}

/** An escalated deadline moved: the awaited call shows the new one. */
function applyEscalated(
  s: RunSnapshot,
  event: EventOf<'tool_call.deadline_escalated'>,
): RunSnapshot {
  if (!s.await?.calls.some((c) => c.toolCallId === event.toolCallId)) return s;
  const calls = s.await.calls.map((c) =>
    c.toolCallId === event.toolCallId && c.deadline
      ? { ...c, deadline: { at: event.deadlineAt, action: event.outcome.action, escalated: true } }
      : c,
  );
  return { ...s, await: awaitOf(calls) };
}

function withoutAwaited(s: RunSnapshot, toolCallId: string): RunSnapshot {
  if (!s.await?.calls.some((c) => c.toolCallId === toolCallId)) return s;
  return { ...s, await: awaitOf(s.await.calls.filter((c) => c.toolCallId !== toolCallId)) };
}

function errorSummary(outcome: ToolOutcome): string | undefined {
  if (outcome.error === undefined) return undefined;
  const line = outcome.error.split('\n', 1)[0] ?? '';
  return line.length > ERROR_SUMMARY_MAX ? `${line.slice(0, ERROR_SUMMARY_MAX - 1)}…` : line;
}

function applyResult(s: RunSnapshot, event: EventOf<'tool_call.result'>): RunSnapshot {
  const summary = errorSummary(event.outcome);
  return updateCall(s, event.toolCallId, event.toolName, event.at, (call) => {
    const rest = { ...call };
    delete rest.errorSummary;
    delete rest.durationMs;
    return {
      ...rest,
      outcome: event.outcome,
      completedAt: call.completedAt ?? event.at,
      ...(event.durationMs !== undefined ? { durationMs: event.durationMs } : {}),
      ...(summary !== undefined ? { errorSummary: summary } : {}),
    };
  });
}
