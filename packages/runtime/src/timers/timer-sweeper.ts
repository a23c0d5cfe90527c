import type { Logger } from 'pino';
import type { ClaimedTimer, TimerIndex, TimerKind } from './timer-index.ts';

/**
 * What a handler made of a timer: `done` (it fired, or had nothing left to do) removes it;
 * `{ retryAt }` makes it due again then (it came early: another host's clock, or the thing it
 * is about moved its time).
 */
export type TimerFiring = 'done' | { readonly retryAt: number };

export type TimerHandler = (timer: ClaimedTimer) => Promise<TimerFiring>;

export interface TimerSweeperOptions {
  readonly index: TimerIndex;
  readonly now: () => number;
  readonly logger: Logger;
  /**
   * Time between two looks at the change counter (jittered ±25 %, so workers spread out): a
   * timer scheduled meanwhile is swept within about this long.
   */
  readonly intervalMs: number;
  /**
   * Longest time between two sweeps of every shard when nothing changed (default 60 s): catches
   * what the counter does not announce (a dead sweeper's acked-early retry, a lost reply).
   */
  readonly fullSweepMs?: number;
  /** Entries one claim takes; a full batch is followed by another claim at once. */
  readonly batch: number;
  /** How long a claim keeps an entry from other sweepers: a dead sweeper's entries wait this long. */
  readonly leaseMs: number;
}

/**
 * Sweeps the timer index on every live worker: each sweep claims what is due in each shard (one
 * ZRANGEBYSCORE + claim script per batch), fires every claimed timer through its kind's handler,
 * and acks it. Idle, it does not sweep: it sleeps until the earliest entry the last sweep saw
 * (a timer's due time or a claim's expiry), and every interval only GETs the change counter
 * that TimerIndex.schedule bumps; a new count means a timer was added or moved, so it sweeps.
 * One GET per interval instead of a claim script per shard (16 shards at 250 ms: 4 commands/s
 * instead of ~190). Sweepers never fire the same entry at once (the claim moves it out of the due
 * range), and handlers are idempotent (a compare-and-set on what they change), so an entry fired
 * twice after a sweeper died between firing and acking changes nothing the second time.
 */
export class TimerSweeper {
  private readonly opts: TimerSweeperOptions;
  private readonly handlers = new Map<TimerKind, TimerHandler>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;
  private keys: string[] = [];
  private keysReadAt = 0;
  /** The earliest timer the last sweep saw left (ms): the next sweep comes no later. */
  private earliest = Number.POSITIVE_INFINITY;
  /** The change counter read before the last sweep (null: never swept). */
  private seenChanges: string | null = null;
  private lastSweepAt = 0;

  constructor(opts: TimerSweeperOptions) {
    this.opts = opts;
  }

  /** Registers the handler of a kind (one per kind; a later one replaces it). */
  on(kind: TimerKind, handler: TimerHandler): this {
    this.handlers.set(kind, handler);
    return this;
  }

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops sweeping and waits for the sweep under way; claimed, unfired timers come back later. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass over every shard (tests call it directly); the number of timers fired. */
  async sweep(): Promise<number> {
    const { index, now, batch, leaseMs } = this.opts;
    if (this.keys.length === 0 || now() - this.keysReadAt > 10_000) {
      this.keys = await index.shardKeys();
      this.keysReadAt = now();
    }
    // A random first shard: workers sweeping at once do not all start on the same one.
    const start = Math.floor(Math.random() * this.keys.length);
    let fired = 0;
    let earliest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.keys.length && !this.stopped; i += 1) {
      const key = this.keys[(start + i) % this.keys.length] ?? '';
      for (;;) {
        const { claimed, next } = await index.claim(key, now(), batch, leaseMs);
        if (claimed.length === 0) {
          if (next !== null) earliest = Math.min(earliest, next);
          break;
        }
        const settled = await Promise.all(claimed.map((t) => this.fire(t)));
        const acks = settled.flatMap((n, j) => {
          const timer = claimed[j];
          return n === undefined || timer === undefined ? [] : [{ timer, next: n }];
        });
        await index.ack(acks);
        fired += claimed.length;
        if (this.stopped) break;
      }
    }
    this.earliest = earliest;
    return fired;
  }

  /**
   * null: remove it; a number: due again then; undefined: leave it claimed (its handler failed),
   * so it is due again when the claim expires.
   */
  private async fire(timer: ClaimedTimer): Promise<number | null | undefined> {
    const handler = this.handlers.get(timer.kind);
    if (!handler) {
      // A kind this worker does not know (a newer release's): due again for whoever does.
      return timer.due + this.opts.leaseMs;
    }
    try {
      const result = await handler(timer);
      return result === 'done' ? null : result.retryAt;
    } catch (err) {
      this.opts.logger.warn(
        { err, kind: timer.kind, runId: timer.runId, toolCallId: timer.callId },
        'a timer could not be fired; it is tried again when its claim expires',
      );
      return undefined;
    }
  }

  /**
   * One wake-up: sweeps when a known timer is due, when the change counter moved since the last
   * sweep, or when the last full sweep is older than `fullSweepMs`; otherwise only the GET.
   */
  private async tick(): Promise<void> {
    const { index, now, fullSweepMs = 60_000 } = this.opts;
    const t = now();
    // Read before the sweep: a schedule that lands during the sweep moves it again, so the
    // next tick sweeps once more rather than missing it.
    const changes = await index.changes();
    if (t < this.earliest && t - this.lastSweepAt < fullSweepMs && changes === this.seenChanges)
      return;
    this.seenChanges = changes;
    this.lastSweepAt = t;
    await this.sweep();
  }

  private schedule(): void {
    if (this.stopped) return;
    const { intervalMs, now } = this.opts;
    // At the next timer when it comes before the next look at the counter (so a deadline fires
    // on time, not up to an interval late), never sooner than 5 ms (a busy shard is swept in a
    // loop by sweep() itself).
    const periodic = intervalMs * (0.75 + Math.random() * 0.5);
    const delay = Math.max(5, Math.min(periodic, this.earliest - now()));
    this.timer = setTimeout(() => {
      this.running = this.tick()
        .catch((err: unknown) => {
          this.opts.logger.warn({ err }, 'timer sweep failed');
        })
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, delay);
    this.timer.unref();
  }
}
