import { randomUUID } from 'node:crypto';
import {
  InferenceAccumulator,
  assistantMessageId,
  modelRetryPolicy,
  retryingModelCall,
  type Engine,
  type InferenceRequest,
  type InferenceResponse,
} from '@baton/core';
import { LeaseLostError, type Lease } from '@baton/runtime/internal';
import { AttemptAppends, isAppendFailure } from './attempt-appends.ts';
import { DeltaCoalescer } from './delta-coalescer.ts';
import type { WorkerDeps } from './worker-deps.ts';

/** What a step's inference came to (StepProcessor acts on it). */
export type InferOutcome =
  | { readonly kind: 'answered'; readonly response: InferenceResponse }
  /** Cancelled or changed meanwhile: look at the run again. */
  | { readonly kind: 'replan' }
  | { readonly kind: 'failed'; readonly message: string };

/**
 * Streams the model; deltas are appended as they come, fenced on the lease. A retryable failure
 * (429, 5xx, network, the per-call timeout) is retried within the agent's budget: each retry is
 * a model.retry event, and the next attempt's fresh nonce makes its first delta emit the
 * inference.reset that drops what the failed attempt streamed.
 */
export async function infer(
  deps: WorkerDeps,
  engine: Engine,
  request: InferenceRequest,
  lease: Lease,
  log: WorkerDeps['logger'],
): Promise<InferOutcome> {
  const messageId = assistantMessageId(request.runId, request.step);
  const reset = { type: 'inference.reset' as const, step: request.step, messageId };
  const tracked = deps.aborts.track(request.runId);
  const started = deps.clock.now();
  let attempt = new AttemptAppends(deps.store, request.runId, lease, request.step, '', reset);
  try {
    const outcome = await retryingModelCall({
      policy: modelRetryPolicy(engine.agent.modelRetry),
      clock: deps.clock,
      signal: AbortSignal.any([tracked.signal, lease.signal]),
      call: (signal) => {
        attempt = new AttemptAppends(
          deps.store,
          request.runId,
          lease,
          request.step,
          randomUUID().slice(0, 8),
          reset,
        );
        return streamOnce(deps, engine, request, signal, attempt);
      },
      interrupt: (error) => afterModelError(deps, request.runId, lease, tracked.signal, error),
      onRetry: async (retry) => {
        log.info(retry, 'model call retried');
        await attempt.append([{ type: 'model.retry', step: request.step, ...retry }]);
      },
    });
    switch (outcome.kind) {
      case 'answered':
        log.debug(
          { ms: deps.clock.now() - started, attempts: outcome.attempts },
          'inference finished',
        );
        return { kind: 'answered', response: outcome.value };
      case 'interrupted':
        return { kind: 'replan' };
      case 'failed': {
        log.warn({ err: outcome.error, attempts: outcome.attempts }, 'model failed');
        const tries = outcome.attempts > 1 ? ` after ${outcome.attempts} attempts` : '';
        return { kind: 'failed', message: `model failed${tries}: ${outcome.message}` };
      }
    }
  } finally {
    tracked.done();
  }
}

/** One model call: its deltas are appended under the attempt's marker. */
async function streamOnce(
  deps: WorkerDeps,
  engine: Engine,
  request: InferenceRequest,
  signal: AbortSignal,
  attempt: AttemptAppends,
): Promise<InferenceResponse> {
  const messageId = assistantMessageId(request.runId, request.step);
  const acc = new InferenceAccumulator();
  let streamed = false;
  const deltas = new DeltaCoalescer(async (events) => {
    await attempt.append(events);
  }, deps.deltas);
  try {
    for await (const part of engine.agent.model.stream(request, signal)) {
      acc.push(part);
      if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
        await deltas.push({
          type: part.type === 'text-delta' ? 'text.delta' : 'reasoning.delta',
          step: request.step,
          messageId,
          delta: part.delta,
        });
        if (!streamed) {
          streamed = true;
          await deps.probe?.('after-delta', { runId: request.runId, step: request.step });
        }
      }
    }
    // Every delta is in the log before the answer is committed.
    await deltas.flush();
  } finally {
    deltas.discard();
  }
  return acc.result();
}

/**
 * What a failed call or wait means beyond the model: a lost lease (throws), a cancel or a
 * finished run (replan), a shutdown or a Redis failure of the deltas' appends (throws; the job
 * is retried). Null: the model's.
 */
async function afterModelError(
  deps: WorkerDeps,
  runId: string,
  lease: Lease,
  shutdown: AbortSignal,
  error: unknown,
): Promise<'replan' | undefined> {
  if (LeaseLostError.isInstance(error) || lease.lost) {
    lease.markLost('a delta append was fenced');
    throw new LeaseLostError(runId);
  }
  const fresh = await deps.committer.load(runId);
  // Cancelled (plan() says cancel next), finished, or the append found the run done.
  if (!fresh || fresh.checkpoint.cancelRequested || fresh.checkpoint.status === 'done')
    return 'replan';
  // Aborted without a cancel: this process is shutting down; the job is retried elsewhere.
  if (shutdown.aborted)
    throw new Error('inference aborted: worker shutting down', { cause: error });
  // Redis refused a streamed delta (down, failing over): not the model's failure. The job
  // fails and the queue retries the step; the next attempt's inference.reset drops this one's.
  if (isAppendFailure(error)) throw error;
  return undefined;
}
