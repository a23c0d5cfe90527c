import type { EventBody } from '@baton/protocol';

/** A streamed text or reasoning delta, as appended to the run's log. */
export type DeltaEvent = Extract<EventBody, { type: 'text.delta' | 'reasoning.delta' }>;

export interface DeltaCoalescerOptions {
  /**
   * Deltas arriving within this many ms of the last write are merged into the next write
   * (0: every delta is written on its own). The first delta after a quiet period is written at
   * once, so the time to the first token does not grow.
   */
  readonly windowMs: number;
  /** A write happens as soon as this many characters are buffered. */
  readonly maxChars: number;
}

const DEFAULT_DELTA_COALESCING: DeltaCoalescerOptions = { windowMs: 40, maxChars: 4096 };

/**
 * Turns a model's token stream into few appends: a leading-edge throttle. Each delta costs a
 * fenced script, a stream entry and a PUBLISH when written alone (hundreds per step for a real
 * model); merged, a step writes one append per window. Consecutive deltas of the same kind and
 * message are concatenated into one event, so the text a client assembles is the same, in the
 * same order, with fewer frames. Writes are serialized, so order is kept.
 */
export class DeltaCoalescer {
  private buffer: DeltaEvent[] = [];
  private chars = 0;
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private writing: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private readonly write: (events: DeltaEvent[]) => Promise<void>;
  private readonly opts: DeltaCoalescerOptions;
  private readonly now: () => number;

  constructor(
    write: (events: DeltaEvent[]) => Promise<void>,
    opts: DeltaCoalescerOptions = DEFAULT_DELTA_COALESCING,
    now: () => number = Date.now,
  ) {
    this.write = write;
    this.opts = opts;
    this.now = now;
  }

  /** Buffers `delta`; writes at once when the window has passed or the buffer is full. */
  async push(delta: DeltaEvent): Promise<void> {
    this.rethrow();
    const last = this.buffer.at(-1);
    if (
      last &&
      last.type === delta.type &&
      last.messageId === delta.messageId &&
      last.step === delta.step
    )
      this.buffer[this.buffer.length - 1] = { ...last, delta: last.delta + delta.delta };
    else this.buffer.push(delta);
    this.chars += delta.delta.length;
    const due = this.lastWriteAt + this.opts.windowMs;
    if (this.opts.windowMs <= 0 || this.chars >= this.opts.maxChars || this.now() >= due) {
      await this.flush();
      return;
    }
    this.timer ??= setTimeout(
      () => {
        this.timer = undefined;
        this.flush().catch((error: unknown) => {
          this.failure ??= { error };
        });
      },
      Math.max(0, due - this.now()),
    );
  }

  /** Writes whatever is buffered (and waits for earlier writes). */
  async flush(): Promise<void> {
    this.clearTimer();
    if (this.buffer.length > 0) {
      const batch = this.buffer;
      this.buffer = [];
      this.chars = 0;
      this.lastWriteAt = this.now();
      this.writing = this.writing.then(() => this.write(batch));
    }
    await this.writing;
    this.rethrow();
  }

  /** Drops what is buffered (the attempt failed: its deltas are superseded). */
  discard(): void {
    this.clearTimer();
    this.buffer = [];
    this.chars = 0;
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private rethrow(): void {
    if (this.failure) throw this.failure.error;
  }
}
