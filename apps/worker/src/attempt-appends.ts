import { isBatonError, type EventBody } from '@baton/protocol';
import type { Lease, RedisRunStore } from '@baton/runtime/internal';

/** Errors an append got from Redis (not a refusal of Baton's: a lost lease, a finished run). */
const redisFailures = new WeakSet<Error>();

/**
 * Whether `error` is a Redis failure of an inference's appends (Redis down, a cluster failing
 * over): the step is retried by the queue; it is never the model's failure.
 */
export function isAppendFailure(error: unknown): boolean {
  return error instanceof Error && redisFailures.has(error);
}

/**
 * The appends of one inference attempt, numbered in the order they are sent: the number makes
 * an append that reaches Redis twice (ioredis re-sends a command left unanswered by a dropped
 * connection, though Redis may have run it) land once (RedisRunStore.appendDeltas). Appends
 * must be sent one after another, as the delta coalescer does.
 */
export class AttemptAppends {
  private sent = 0;
  private readonly store: Pick<RedisRunStore, 'appendDeltas'>;
  private readonly runId: string;
  private readonly lease: Lease;
  private readonly step: number;
  private readonly nonce: string;
  private readonly reset: EventBody;

  constructor(
    store: Pick<RedisRunStore, 'appendDeltas'>,
    runId: string,
    lease: Lease,
    step: number,
    nonce: string,
    reset: EventBody,
  ) {
    this.store = store;
    this.runId = runId;
    this.lease = lease;
    this.step = step;
    this.nonce = nonce;
    this.reset = reset;
  }

  async append(events: readonly EventBody[]): Promise<void> {
    const index = this.sent;
    this.sent += 1;
    try {
      await this.store.appendDeltas(
        this.runId,
        this.lease.token,
        { step: this.step, nonce: this.nonce, reset: this.reset, index },
        events,
      );
    } catch (error) {
      if (error instanceof Error && !isBatonError(error)) redisFailures.add(error);
      throw error;
    }
  }
}
