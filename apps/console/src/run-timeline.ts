import type {
  RunEvent,
  RunStatus,
  TerminationReason,
  ToolCallStatus,
  ToolOutcome,
} from '@baton/protocol';

/** A tool call as the run page shows it: every status it went through, in order. */
export interface ToolCallView {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly step: number;
  readonly arguments: unknown;
  readonly statuses: readonly ToolCallStatus[];
  readonly outcome?: ToolOutcome;
}

/** The assistant's text of one step: growing while it streams, final once committed. */
export interface AssistantText {
  readonly step: number;
  readonly messageId: string;
  readonly text: string;
  readonly streaming: boolean;
}

/** One line of the timeline (text deltas are folded into AssistantText instead). */
export interface TimelineEntry {
  readonly seq: number;
  readonly at: number;
  readonly type: RunEvent['type'];
  readonly summary: string;
}

export interface RunView {
  readonly lastSeq: number;
  readonly status: RunStatus | null;
  readonly agent: string | null;
  readonly termination: TerminationReason | null;
  readonly texts: readonly AssistantText[];
  readonly toolCalls: readonly ToolCallView[];
  readonly timeline: readonly TimelineEntry[];
}

export const EMPTY_VIEW: RunView = {
  lastSeq: 0,
  status: null,
  agent: null,
  termination: null,
  texts: [],
  toolCalls: [],
  timeline: [],
};

function json(value: unknown, max = 120): string {
  const text = JSON.stringify(value) ?? '';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * A decision's payload as the timeline shows it: what the approver wrote (`comment`, or a
 * payload that is just text) quoted, anything else as JSON.
 */
function payloadText(payload: unknown): string {
  if (payload === undefined || payload === null) return '';
  if (typeof payload === 'string') return `: “${payload}”`;
  const comment = (payload as { comment?: unknown }).comment;
  if (typeof comment === 'string' && Object.keys(payload).length === 1) return `: “${comment}”`;
  return ` with ${json(payload)}`;
}

/** What the timeline says about an event; null for events it leaves out. */
function summarize(event: RunEvent): string | null {
  switch (event.type) {
    case 'run.created':
      return `created (agent ${event.agent}, ${event.executionMode})`;
    case 'run.started':
      return 'started on a worker';
    case 'run.status':
      return `status ${event.from} → ${event.to}`;
    case 'message.input':
      return `user: ${typeof event.message.content === 'string' ? event.message.content : json(event.message.content)}`;
    case 'step.started':
      return `step ${event.step}`;
    case 'inference.reset':
      return 'partial answer discarded; the model starts again';
    case 'message.assistant':
      return `assistant message (step ${event.step})`;
    case 'tool_call.created':
      return `${event.toolName} called with ${json(event.arguments)}`;
    case 'tool_call.status':
      return `${event.toolName}: ${event.from} → ${event.to}`;
    case 'tool_call.suspended':
      return `${event.toolName} waits: ${event.ticket.message}`;
    case 'tool_call.result':
      return `${event.toolName} ${event.outcome.status}${event.outcome.error ? `: ${event.outcome.error}` : ''}`;
    case 'decision.applied':
      return `decision ${event.decision.action === 'resume' ? 'approve' : 'deny'} (${event.decision.toolCallId})${event.decision.source !== undefined && event.decision.source !== 'api' ? ` by ${event.decision.source}` : ''}${payloadText(event.decision.payload)}`;
    case 'tool_call.deadline_expired':
      return `${event.toolName}: deadline passed (${new Date(event.deadlineAt).toISOString()}), ${event.outcome.action}`;
    case 'tool_call.deadline_escalated':
      return `${event.toolName}: escalated, deadline moved to ${new Date(event.deadlineAt).toISOString()}`;
    case 'decision.discarded':
      return `decision ${event.decision.decisionId} not applied: ${event.reason}`;
    case 'child_run.linked':
      return event.link.toolName === event.link.childAgentId
        ? `${event.link.toolName} runs as child run ${event.link.childRunId}`
        : `${event.link.toolName} runs as child run ${event.link.childRunId} (agent ${event.link.childAgentId})`;
    case 'child_run.finished':
      return `child run ${event.child.runId} ended: ${event.child.termination.kind}`;
    case 'run.cancel_requested':
      return 'cancel requested';
    case 'model.retry':
      return `model call failed (${event.reason}); retry ${event.attempt} in ${Math.round(event.delayMs)} ms`;
    case 'step.finished':
      return `step ${event.step} finished (${event.usage.totalTokens} tokens)`;
    case 'run.finished':
      return event.status === 'waiting'
        ? 'waiting for a decision'
        : `finished: ${event.termination.kind}`;
    case 'text.delta':
    case 'reasoning.delta':
    case 'phase':
    case 'state.delta':
    case 'state.conflict':
      return null;
  }
}

function upsertText(texts: readonly AssistantText[], next: AssistantText): AssistantText[] {
  const i = texts.findIndex((t) => t.messageId === next.messageId);
  if (i === -1) return [...texts, next];
  return texts.map((t, j) => (j === i ? next : t));
}

/** Folds one event into the view; events at or below lastSeq are ignored (idempotent). */
export function foldEvent(view: RunView, event: RunEvent): RunView {
  if (event.seq <= view.lastSeq) return view;
  let next: RunView = { ...view, lastSeq: event.seq };
  const summary = summarize(event);
  if (summary !== null)
    next = {
      ...next,
      timeline: [...next.timeline, { seq: event.seq, at: event.at, type: event.type, summary }],
    };
  switch (event.type) {
    case 'run.created':
      return { ...next, agent: event.agent, status: 'created' };
    case 'run.status':
      return { ...next, status: event.to };
    case 'run.finished':
      return {
        ...next,
        status: event.status,
        termination: event.status === 'done' ? event.termination : null,
      };
    case 'text.delta': {
      const current = next.texts.find((t) => t.messageId === event.messageId);
      return {
        ...next,
        texts: upsertText(next.texts, {
          step: event.step,
          messageId: event.messageId,
          text: (current?.text ?? '') + event.delta,
          streaming: true,
        }),
      };
    }
    case 'inference.reset':
      return { ...next, texts: next.texts.filter((t) => t.messageId !== event.messageId) };
    case 'message.assistant': {
      const text = event.message.content;
      return {
        ...next,
        texts: upsertText(
          next.texts.filter((t) => !(t.step === event.step && t.streaming)),
          { step: event.step, messageId: event.message.id, text, streaming: false },
        ).filter((t) => t.text !== ''),
      };
    }
    case 'tool_call.created':
      return {
        ...next,
        toolCalls: [
          ...next.toolCalls,
          {
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            step: event.step,
            arguments: event.arguments,
            statuses: ['new'],
          },
        ],
      };
    case 'tool_call.status':
      return {
        ...next,
        toolCalls: next.toolCalls.map((c) =>
          c.toolCallId === event.toolCallId ? { ...c, statuses: [...c.statuses, event.to] } : c,
        ),
      };
    case 'tool_call.result':
      return {
        ...next,
        toolCalls: next.toolCalls.map((c) =>
          c.toolCallId === event.toolCallId ? { ...c, outcome: event.outcome } : c,
        ),
      };
    default:
      return next;
  }
}
