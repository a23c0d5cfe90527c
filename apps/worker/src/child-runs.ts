import type { ToolInvocation } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import type { WorkerDeps } from './worker-deps.ts';

export interface ChildCallsOutcome {
  /** Invocations that are not agent calls: executed inline or as tool jobs, as before. */
  readonly rest: readonly ToolInvocation[];
  /** A child could not start and its failure is now the call's result: apply it. */
  readonly recorded: boolean;
  /** Calls whose child run exists now (created by this pass or earlier). */
  readonly started: number;
}

/**
 * The step path's hook for agent tools: an invocation of an agent tool is not executed here,
 * its child run is created (or found: the id is derived from the call, so a redelivered job or
 * a re-run round creates it once). The parent's job then holds nothing for it: the child's end
 * delivers the result to the mailbox and schedules a pass over the parent (ChildRuns.deliver).
 */
export async function startChildCalls(
  deps: WorkerDeps,
  cp: Checkpoint,
  invocations: readonly ToolInvocation[],
  log: WorkerDeps['logger'],
  /** The commit just before started every call: no child of theirs can exist yet. */
  startedHere = false,
): Promise<ChildCallsOutcome> {
  const rest: ToolInvocation[] = [];
  let recorded = false;
  let started = 0;
  for (const invocation of invocations) {
    const call = cp.calls[invocation.toolCallId];
    if (!invocation.child || !call?.child) {
      rest.push(invocation);
      continue;
    }
    if (await deps.mailbox.get(cp.identity.runId, call.id, call.attempt)) {
      recorded = true; // delivered already: the caller's next pass applies it
      continue;
    }
    await deps.probe?.('before-child-start', {
      runId: cp.identity.runId,
      toolCallId: call.id,
      childRunId: call.child.runId,
    });
    const outcome = await deps.children.start(cp, call, startedHere);
    await deps.probe?.('after-child-start', {
      runId: cp.identity.runId,
      toolCallId: call.id,
      childRunId: call.child.runId,
      outcome: outcome.kind,
    });
    if (outcome.kind === 'failed' || outcome.kind === 'finished') {
      if (outcome.kind === 'failed')
        log.warn(
          { child: call.child.runId, result: outcome.result.result },
          'child run not started',
        );
      // 'finished': the child ended and Redis let it go before its result reached us.
      await deps.mailbox.record(cp.identity.runId, outcome.result);
      recorded = true;
      continue;
    }
    started += 1;
  }
  return { rest, recorded, started };
}
