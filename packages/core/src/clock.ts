import type { Clock } from './ports.ts';

interface Sleeper {
  readonly at: number;
  readonly resolve: () => void;
}

/**
 * A clock that only moves when told to: sleeps resolve as time is advanced, so timing-dependent
 * behaviour (timeouts, slow tools) is tested without real timers.
 */
export class ManualClock implements Clock {
  private current: number;
  private sleepers: Sleeper[] = [];

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const sleeper = { at: this.current + ms, resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          reject(signal.reason as Error);
        },
        { once: true },
      );
    });
  }

  /** Moves time forward and wakes every sleeper whose deadline passed, in deadline order. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      const due = this.sleepers.filter((s) => s.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.current = Math.max(this.current, due.at);
      this.sleepers = this.sleepers.filter((s) => s !== due);
      due.resolve();
      // Let the woken task run until it blocks again before waking the next one.
      for (let i = 0; i < 20; i += 1) await Promise.resolve();
    }
    this.current = target;
  }

  pendingSleepers(): number {
    return this.sleepers.length;
  }
}
