import {
  deadlineDecisionId,
  durationMs,
  type Decision,
  type DeadlineOutcome,
  type FinalDeadlineOutcome,
} from '@baton/protocol';
import { isBatonError } from '../errors.ts';
import { own } from '../own.ts';
import { receiveDecisions } from './decisions.ts';
import type { Draft } from './draft.ts';

/** What a deadline's timer found when it fired. */
export type DeadlineExpiry =
  /** It decided the call (deny, resume), asked for the run's cancel, or escalated. */
  | { readonly kind: 'fired'; readonly outcome: DeadlineOutcome }
  /** The call's deadline is later than now (it was extended): the timer fires again then. */
  | { readonly kind: 'not_due'; readonly at: number }
  /** Nothing to do: the call was decided first, is no longer waiting, or the run ended. */
  | { readonly kind: 'moot'; readonly why: string };

/**
 * A deadline's timer fired for `toolCallId`. Exactly once per deadline, whoever races it: it
 * acts only on a call still suspended, with no decision in the inbox and a deadline that has
 * passed, and everything it does is one commit (the caller's compare-and-set), after which the
 * call has a decision (or the run a cancel request) and a second firing is moot. A client's
 * decision that loses the race is refused by receiveDecisions (409 `decision_conflict` or
 * `call_not_suspended`, naming the deadline).
 *
 * The 'cancel' outcome is returned for the caller to request the run's cancel in the same draft.
 */
export function expireDeadline(draft: Draft, toolCallId: string): DeadlineExpiry {
  const { cp } = draft;
  if (cp.status === 'done') return { kind: 'moot', why: 'the run has ended' };
  if (cp.cancelRequested) return { kind: 'moot', why: 'the run is being cancelled' };
  const call = own(cp.calls, toolCallId);
  const deadline = call?.ticket?.deadline;
  if (!call || call.status !== 'suspended' || deadline?.at === undefined)
    return { kind: 'moot', why: 'the call no longer waits with a deadline' };
  if (deadline.at > draft.now) return { kind: 'not_due', at: deadline.at };
  if (cp.inbox.some((d) => d.toolCallId === toolCallId))
    return { kind: 'moot', why: 'a decision for the call arrived first' };
  const { at, outcome } = deadline;
  draft.emit({
    type: 'tool_call.deadline_expired',
    toolCallId,
    toolName: call.name,
    deadlineAt: at,
    outcome,
  });
  if (outcome.action === 'escalate') {
    const next = at + (durationMs(outcome.extendBy) ?? 0);
    const then: FinalDeadlineOutcome =
      outcome.then ??
      (outcome.reason !== undefined
        ? { action: 'deny', reason: outcome.reason }
        : { action: 'deny' });
    const ticket = call.ticket;
    if (ticket) call.ticket = { ...ticket, deadline: { at: next, outcome: then, escalated: true } };
    draft.emit({
      type: 'tool_call.deadline_escalated',
      toolCallId,
      toolName: call.name,
      deadlineAt: next,
      outcome: then,
      ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}),
    });
    return { kind: 'fired', outcome };
  }
  if (outcome.action === 'cancel') return { kind: 'fired', outcome };
  const decisionId = deadlineDecisionId(toolCallId, at);
  // An event wait's own timeout keeps the source it always had on the wire ('timeout').
  const waitFor = call.ticket?.waitFor;
  const source = waitFor?.kind === 'event' && waitFor.expiresAt === at ? 'timeout' : 'deadline';
  const deny = (reason: string | undefined): Decision => ({
    decisionId,
    toolCallId,
    action: 'cancel',
    source,
    reason: reason ?? `no decision before its deadline`,
  });
  if (outcome.action === 'deny') {
    receiveDecisions(draft, [deny(outcome.reason)]);
    return { kind: 'fired', outcome };
  }
  const resume: Decision = {
    decisionId,
    toolCallId,
    action: 'resume',
    source,
    ...(outcome.payload !== undefined ? { payload: outcome.payload } : {}),
  };
  try {
    receiveDecisions(draft, [resume]);
    return { kind: 'fired', outcome };
  } catch (error) {
    // A resume payload the ticket's schema refuses must not leave the call waiting for ever.
    if (!isBatonError(error, 'payload_invalid')) throw error;
    receiveDecisions(draft, [deny(`the deadline's resume payload was refused: ${error.message}`)]);
    return { kind: 'fired', outcome: { action: 'deny' } };
  }
}
