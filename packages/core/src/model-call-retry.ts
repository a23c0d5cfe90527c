import { ModelCallTimeoutError } from './errors/model-call-timeout-error.ts';
import { classifyModelError, retryDelay, type ModelRetryPolicy } from './model-retry.ts';
import type { Clock } from './ports.ts';
import { stopTimer } from './stop-timer.ts';

/** What a model.retry event says about one failed attempt. */
export interface ModelRetryNotice {
  /** The attempt that failed (1 = the first call). */
  readonly attempt: number;
  readonly delayMs: number;
  readonly reason: string;
  readonly message: string;
}

export interface RetryingCallOptions<T> {
  readonly policy: ModelRetryPolicy;
  /** Times the per-call timeout and the waits between attempts. */
  readonly clock: Clock;
  /** The run's signal (cancel, lost lease, shutdown): aborts the call in flight and any wait. */
  readonly signal: AbortSignal;
  /** One attempt; its signal also aborts at the policy's callTimeoutMs. */
  readonly call: (signal: AbortSignal, attempt: number) => Promise<T>;
  /**
   * Looks at every failure (of a call or of a wait) before the model is blamed: a value ends the
   * loop as 'interrupted' (the run was cancelled, say), a throw propagates (a lost lease).
   */
  readonly interrupt?: (error: unknown) => Promise<unknown>;
  /** Records a retry before its wait (the model.retry event). */
  readonly onRetry: (notice: ModelRetryNotice) => Promise<void>;
  readonly random?: () => number;
}

export type RetryingCallOutcome<T> =
  | { readonly kind: 'answered'; readonly value: T; readonly attempts: number }
  | {
      readonly kind: 'failed';
      readonly error: unknown;
      readonly message: string;
      readonly attempts: number;
    }
  | { readonly kind: 'interrupted'; readonly by: unknown };

/**
 * Calls the model until it answers, a failure is not retryable, or the budget is spent: the
 * policy's attempts, each within callTimeoutMs, separated by backoff with jitter that is never
 * shorter than the provider's Retry-After. Shared by the worker and the in-process runner.
 */
export async function retryingModelCall<T>(
  options: RetryingCallOptions<T>,
): Promise<RetryingCallOutcome<T>> {
  const { policy, clock, signal } = options;
  for (let attempt = 1; ; attempt += 1) {
    let error: unknown;
    try {
      return { kind: 'answered', value: await timedCall(options, attempt), attempts: attempt };
    } catch (caught) {
      error = caught;
    }
    const by = await options.interrupt?.(error);
    if (by !== undefined) return { kind: 'interrupted', by };
    const failure = classifyModelError(error, clock.now());
    const message = error instanceof Error ? error.message : String(error);
    const delayMs =
      failure.retryable && attempt < policy.maxAttempts
        ? retryDelay(policy, attempt, failure.retryAfterMs, options.random)
        : null;
    if (delayMs === null) return { kind: 'failed', error, message, attempts: attempt };
    try {
      await options.onRetry({
        attempt,
        delayMs,
        reason: failure.reason,
        message: message.slice(0, 500),
      });
      await clock.sleep(delayMs, signal);
    } catch (waitError) {
      const stopped = await options.interrupt?.(waitError);
      if (stopped !== undefined) return { kind: 'interrupted', by: stopped };
      throw waitError;
    }
  }
}

async function timedCall<T>(options: RetryingCallOptions<T>, attempt: number): Promise<T> {
  const { policy, clock, signal } = options;
  const timeout = new AbortController();
  const timer = new AbortController();
  clock.sleep(policy.callTimeoutMs, timer.signal).then(
    () => timeout.abort(new ModelCallTimeoutError(policy.callTimeoutMs)),
    () => undefined,
  );
  try {
    return await options.call(AbortSignal.any([signal, timeout.signal]), attempt);
  } catch (error) {
    // Providers report an abort their own way (AbortError, a wrapped fetch error): ours wins.
    if (timeout.signal.aborted && !signal.aborted) throw timeout.signal.reason as Error;
    throw error;
  } finally {
    stopTimer(timer);
  }
}
