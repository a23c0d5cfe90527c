import { foldSnapshot } from '@baton/core';
import type {
  EventBody,
  RunChildFinishedData,
  RunEvent,
  RunSnapshot,
  WebhookEventType,
  WebhookMessage,
} from '@baton/protocol';

/**
 * Which webhook messages a run's committed events produce, and their bodies. Messages are
 * derived from the event log alone, so deriving them twice (a crash, the sweeper) gives the same
 * message with the same webhook id.
 */

/** What the run's webhook configuration adds to every message. */
export interface MessageContext {
  readonly tenantId: string;
  readonly metadata: Readonly<Record<string, string>>;
}

/** A message to deliver, with the event it reports. */
export interface WebhookMessageDraft {
  readonly type: WebhookEventType;
  readonly seq: number;
  readonly message: WebhookMessage;
}

const MAX_LAST_MESSAGE = 16_384;

/**
 * Child runs: when a child run ends, the parent's log records it (`child_run.finished`, right
 * after the agent call's `tool_call.result`), and the parent's subscribers get a
 * `run.child_finished` message: the commit hook, the outbox, the sweeper, signing and delivery
 * are generic.
 */
export function childOutcomeOf(event: EventBody): RunChildFinishedData['child'] | null {
  if (event.type !== 'child_run.finished') return null;
  const { runId, agent, status, termination, toolCallId } = event.child;
  return { runId, agent, status, termination, toolCallId };
}

/** The webhook type a committed run event reports, if any. */
export function webhookTypeOf(event: EventBody): WebhookEventType | null {
  if (event.type === 'run.finished')
    return event.status === 'waiting' ? 'run.waiting' : 'run.finished';
  // An escalation is reported by its own event (the new deadline), not by the expiry before it.
  if (event.type === 'tool_call.deadline_expired')
    return event.outcome.action === 'escalate' ? null : 'tool_call.deadline';
  if (event.type === 'tool_call.deadline_escalated') return 'tool_call.deadline';
  return childOutcomeOf(event) === null ? null : 'run.child_finished';
}

/** Whether a transition's events may produce a message (the commit hook's cheap pre-check). */
export function mayProduceMessages(events: readonly EventBody[]): boolean {
  return events.some((e) => webhookTypeOf(e) !== null);
}

function ref(snapshot: RunSnapshot, event: RunEvent, ctx: MessageContext) {
  return {
    runId: event.runId,
    threadId: event.threadId,
    turnId: event.turnId,
    tenantId: ctx.tenantId,
    agent: snapshot.agent,
    seq: event.seq,
    metadata: { ...ctx.metadata },
  };
}

/** The data of a `run.child_finished` message (called once the child-run event exists). */
export function childFinishedData(
  parent: ReturnType<typeof ref>,
  child: RunChildFinishedData['child'],
): RunChildFinishedData {
  return { ...parent, child: { ...child } };
}

/**
 * The messages reported by `events` with seq > `after`; `events` is the run's log from its first
 * event (each message describes the run as of its own event, so a `run.waiting` lists the calls
 * suspended at that moment, not later ones).
 */
export function messagesFor(
  events: readonly RunEvent[],
  after: number,
  ctx: MessageContext,
): WebhookMessageDraft[] {
  const drafts: WebhookMessageDraft[] = [];
  let snapshot: RunSnapshot | undefined;
  for (const event of [...events].sort((a, b) => a.seq - b.seq)) {
    snapshot = foldSnapshot([event], snapshot);
    if (event.seq <= after) continue;
    const type = webhookTypeOf(event);
    if (type === null) continue;
    const timestamp = new Date(event.at).toISOString();
    if (type === 'run.finished' && event.type === 'run.finished') {
      const text = snapshot.lastAssistantMessage;
      drafts.push({
        type,
        seq: event.seq,
        message: {
          type,
          timestamp,
          data: {
            ...ref(snapshot, event, ctx),
            status: 'done',
            termination: event.termination,
            usage: event.usage,
            finishedAt: event.at,
            lastAssistantMessage: text === null ? null : text.slice(0, MAX_LAST_MESSAGE),
          },
        },
      });
    } else if (type === 'run.waiting' && snapshot.await !== null) {
      drafts.push({
        type,
        seq: event.seq,
        message: {
          type,
          timestamp,
          data: {
            ...ref(snapshot, event, ctx),
            status: 'waiting',
            await: snapshot.await,
            since: event.at,
          },
        },
      });
    } else if (type === 'tool_call.deadline') {
      const data =
        event.type === 'tool_call.deadline_expired'
          ? { event: 'expired' as const, deadlineAt: event.deadlineAt, outcome: event.outcome }
          : event.type === 'tool_call.deadline_escalated'
            ? {
                event: 'escalated' as const,
                deadlineAt: event.deadlineAt,
                outcome: event.outcome,
                ...(event.reason !== undefined ? { reason: event.reason } : {}),
              }
            : null;
      if (data !== null && 'toolCallId' in event)
        drafts.push({
          type,
          seq: event.seq,
          message: {
            type,
            timestamp,
            data: {
              ...ref(snapshot, event, ctx),
              toolCallId: event.toolCallId,
              toolName: event.toolName,
              ...data,
            },
          },
        });
    } else if (type === 'run.child_finished') {
      const child = childOutcomeOf(event);
      if (child !== null)
        drafts.push({
          type,
          seq: event.seq,
          message: { type, timestamp, data: childFinishedData(ref(snapshot, event, ctx), child) },
        });
    }
  }
  return drafts;
}
