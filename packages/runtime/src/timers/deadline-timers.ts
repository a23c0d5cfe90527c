import type { DeadlineExpiry } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import type { TimerEntry, TimerRef } from './timer-index.ts';
import type { TimerHandler } from './timer-sweeper.ts';

/** The deadlines a checkpoint waits on: call id -> instant (suspended calls of a live run). */
function deadlinesOf(cp: Checkpoint): Map<string, number> {
  const out = new Map<string, number>();
  if (cp.status === 'done') return out;
  for (const call of Object.values(cp.calls)) {
    const at = call.ticket?.deadline?.at;
    if (call.status === 'suspended' && at !== undefined) out.set(call.id, at);
  }
  return out;
}

/**
 * What a commit from `before` to `after` changes in the timer index: deadlines that appeared or
 * moved (scheduled before the commit, so a crash after it cannot lose one: a timer whose commit
 * failed fires for nothing), and those that went away (cancelled after it: a call decided, a run
 * ended or cancelled).
 */
export function deadlineChanges(
  before: Checkpoint,
  after: Checkpoint,
): { readonly schedule: TimerEntry[]; readonly cancel: TimerRef[] } {
  const was = deadlinesOf(before);
  const is = deadlinesOf(after);
  const { tenantId, runId } = after.identity;
  const schedule: TimerEntry[] = [];
  const cancel: TimerRef[] = [];
  for (const [callId, due] of is)
    if (was.get(callId) !== due) schedule.push({ kind: 'deadline', tenantId, runId, callId, due });
  for (const callId of was.keys())
    if (!is.has(callId)) cancel.push({ kind: 'deadline', tenantId, runId, callId });
  return { schedule, cancel };
}

/**
 * The handler of `deadline` timers: applies the deadline through RunService.expireDeadline (the
 * decision commit path). A deadline found later than now (another host's clock ran ahead) is
 * due again at its time; everything else (fired, moot) is done.
 */
export function deadlineTimerHandler(service: {
  expireDeadline(tenantId: string, runId: string, toolCallId: string): Promise<DeadlineExpiry>;
}): TimerHandler {
  return async (timer) => {
    const expiry = await service.expireDeadline(timer.tenantId, timer.runId, timer.callId);
    return expiry.kind === 'not_due' ? { retryAt: expiry.at } : 'done';
  };
}
