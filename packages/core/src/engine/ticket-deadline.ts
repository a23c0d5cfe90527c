import { durationMs, isSleepTicket, type SuspendTicket, type ToolCallState } from '@baton/protocol';
import type { Draft } from './draft.ts';

/**
 * The ticket a call suspends with, its deadline resolved to an instant: the ticket's own (`at`,
 * or `timeout` from now), else its tool's, else the run's default (run options, else the
 * agent's). A sleep never takes a default: it has its own or none.
 */
export function withResolvedDeadline(
  draft: Draft,
  call: ToolCallState,
  ticket: SuspendTicket,
): SuspendTicket {
  const given = ticket.deadline;
  if (given) {
    if (given.at !== undefined && given.timeout === undefined) return ticket;
    const { timeout, ...rest } = given;
    const at = given.at ?? draft.now + (durationMs(timeout ?? 0) ?? 0);
    return { ...ticket, deadline: { ...rest, at } };
  }
  if (isSleepTicket(ticket)) return ticket;
  const policy =
    draft.ctx.tools.get(call.name)?.deadline ?? draft.cp.deadline ?? draft.ctx.agent.deadline;
  if (!policy) return ticket;
  const at = draft.now + (durationMs(policy.timeout) ?? 0);
  return { ...ticket, deadline: { at, outcome: policy.outcome } };
}
