import type { ToolExecutionResult } from '@baton/protocol';
import { executeTool, type Engine, type ToolInvocation } from '@baton/core';
import type { Lease, Loaded } from '@baton/runtime/internal';
import type { WorkerDeps } from './worker-deps.ts';
import { toolWaitpoint } from './tool-waitpoint.ts';

/**
 * Sequential mode: the calls run inside this job; each result is recorded in the mailbox before
 * it is applied. Returns true when a call was aborted by a cancel (look at the run afresh).
 */
export async function executeInline(
  deps: WorkerDeps,
  engine: Engine,
  state: Loaded,
  invocations: readonly ToolInvocation[],
  lease: Lease,
): Promise<boolean> {
  const runId = state.checkpoint.identity.runId;
  for (const invocation of invocations) {
    if (await deps.mailbox.get(runId, invocation.toolCallId, invocation.attempt)) continue;
    let result: ToolExecutionResult;
    const tracked = deps.aborts.track(runId);
    try {
      await deps.probe?.('before-tool', {
        runId,
        toolCallId: invocation.toolCallId,
        attempt: invocation.attempt,
        idempotencyKey: invocation.idempotencyKey,
        inline: true,
      });
      result = await executeTool(engine.ctx.tools.get(invocation.toolName), invocation, {
        identity: state.checkpoint.identity,
        state: state.checkpoint.state,
        signal: AbortSignal.any([tracked.signal, lease.signal]),
        ...toolWaitpoint(deps, state.checkpoint.identity, invocation.toolCallId),
        now: () => deps.clock.now(),
        sleep: (ms, signal) => deps.clock.sleep(ms, signal),
      });
    } catch (error) {
      lease.check();
      const fresh = await deps.store.load(runId);
      if (tracked.signal.aborted && fresh?.checkpoint.cancelRequested) return true;
      throw error;
    } finally {
      tracked.done();
    }
    // The result is genuine even if the lease went meanwhile: recording it (first writer wins
    // per attempt) spares the new holder a second execution. Applying it is fenced.
    await deps.mailbox.record(runId, result);
    lease.check();
  }
  return false;
}
