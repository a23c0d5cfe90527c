import { APICallError } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import { retryingModelCall, type ModelRetryNotice } from './model-call-retry.ts';
import { modelRetryPolicy } from './model-retry.ts';
import { flush } from './testing/fixtures.ts';

const status = (statusCode: number, headers: Record<string, string> = {}) =>
  new APICallError({
    message: `provider said ${statusCode}`,
    url: 'http://provider',
    requestBodyValues: {},
    statusCode,
    responseHeaders: headers,
  });

const policy = modelRetryPolicy({
  maxAttempts: 3,
  baseDelayMs: 100,
  maxDelayMs: 10_000,
  callTimeoutMs: 1_000,
});

/** A call scripted per attempt: an error to throw, 'hang' (until aborted), or a value. */
function scripted(steps: (Error | string)[]) {
  const signals: AbortSignal[] = [];
  const call = (signal: AbortSignal, attempt: number): Promise<string> => {
    signals.push(signal);
    const step = steps[attempt - 1];
    if (step instanceof Error) return Promise.reject(step);
    if (step === 'hang')
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error('aborted by signal'))),
      );
    return Promise.resolve(step ?? 'no step');
  };
  return { call, signals };
}

function start(
  clock: ManualClock,
  call: (signal: AbortSignal, attempt: number) => Promise<string>,
  extra: { signal?: AbortSignal; interrupt?: (e: unknown) => Promise<unknown> } = {},
) {
  const notices: ModelRetryNotice[] = [];
  const outcome = retryingModelCall({
    policy,
    clock,
    signal: extra.signal ?? new AbortController().signal,
    call,
    onRetry: async (n) => {
      notices.push(n);
    },
    random: () => 1,
    ...(extra.interrupt ? { interrupt: extra.interrupt } : {}),
  });
  return { outcome, notices };
}

describe('retryingModelCall', () => {
  it('waits the Retry-After, then backs off, then answers', async () => {
    const clock = new ManualClock(0);
    const { call } = scripted([status(429, { 'retry-after': '3' }), status(502), 'answer']);
    const { outcome, notices } = start(clock, call);
    await flush();
    expect(notices).toEqual([
      { attempt: 1, delayMs: 3000, reason: 'http 429', message: 'provider said 429' },
    ]);
    await clock.advance(2_999);
    await flush();
    expect(notices).toHaveLength(1); // still waiting: no second call before the Retry-After
    await clock.advance(1);
    await flush();
    expect(notices.map((n) => [n.attempt, n.delayMs, n.reason])).toEqual([
      [1, 3000, 'http 429'],
      [2, 200, 'http 502'],
    ]);
    await clock.advance(200);
    await expect(outcome).resolves.toEqual({ kind: 'answered', value: 'answer', attempts: 3 });
  });

  it('gives up at once on a non-retryable error, with its message', async () => {
    const clock = new ManualClock(0);
    const { outcome, notices } = start(clock, scripted([status(401)]).call);
    await expect(outcome).resolves.toMatchObject({
      kind: 'failed',
      message: 'provider said 401',
      attempts: 1,
    });
    expect(notices).toEqual([]);
  });

  it('gives up when the attempts are spent', async () => {
    const clock = new ManualClock(0);
    const { outcome, notices } = start(
      clock,
      scripted([status(500), status(500), status(500)]).call,
    );
    await flush();
    await clock.advance(100);
    await flush();
    await clock.advance(200);
    await expect(outcome).resolves.toMatchObject({ kind: 'failed', attempts: 3 });
    expect(notices).toHaveLength(2);
  });

  it('aborts a call past callTimeoutMs and retries it as a timeout', async () => {
    const clock = new ManualClock(0);
    const { call, signals } = scripted(['hang', 'answer']);
    const { outcome, notices } = start(clock, call);
    await flush();
    await clock.advance(999);
    await flush();
    expect(signals[0]?.aborted).toBe(false);
    await clock.advance(1);
    await flush();
    expect(signals[0]?.aborted).toBe(true);
    expect(notices[0]).toMatchObject({ attempt: 1, reason: 'timeout' });
    await clock.advance(100);
    await expect(outcome).resolves.toMatchObject({ kind: 'answered', attempts: 2 });
  });

  it("the run's signal interrupts the wait between attempts", async () => {
    const clock = new ManualClock(0);
    const run = new AbortController();
    const interrupt = async (error: unknown) => (run.signal.aborted ? { error } : undefined);
    const { outcome } = start(clock, scripted([status(429, { 'retry-after': '5' })]).call, {
      signal: run.signal,
      interrupt,
    });
    await flush();
    expect(clock.pendingSleepers()).toBe(1);
    run.abort(new Error('cancelled'));
    await expect(outcome).resolves.toMatchObject({ kind: 'interrupted' });
    expect(clock.now()).toBe(0);
  });

  it('a Retry-After beyond maxDelayMs ends the call instead of waiting', async () => {
    const clock = new ManualClock(0);
    const { outcome, notices } = start(
      clock,
      scripted([status(429, { 'retry-after': '60' })]).call,
    );
    await expect(outcome).resolves.toMatchObject({ kind: 'failed', attempts: 1 });
    expect(notices).toEqual([]);
  });
});
