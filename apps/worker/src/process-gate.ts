/**
 * A process-wide bound on work in flight (a counting semaphore). Steps and tools of a worker
 * come from K shard queues, one BullMQ Worker each; BullMQ's concurrency is per Worker, so
 * WORKER_CONCURRENCY and TOOL_CONCURRENCY are enforced here, across all of them.
 *
 * A BullMQ Worker takes up to W + T jobs while the gate runs W: the jobs it holds wait here in
 * priority order (then arrival), or a priority-1 job fetched behind them would wait for all of
 * them, undoing the order BullMQ took them in (docs/fairness.md).
 */
export class ProcessGate {
  private readonly limit: number;
  private running = 0;
  private readonly waiting: { readonly priority: number; readonly go: () => void }[] = [];

  constructor(limit: number) {
    this.limit = limit;
  }

  get inFlight(): number {
    return this.running;
  }

  /** `priority`: 1 goes first; equal ones in arrival order. */
  async run<T>(work: () => Promise<T>, priority = 0): Promise<T> {
    if (this.running >= this.limit)
      await new Promise<void>((resolve) => {
        const behind = this.waiting.findIndex((w) => w.priority > priority);
        const waiter = { priority, go: resolve };
        if (behind < 0) this.waiting.push(waiter);
        else this.waiting.splice(behind, 0, waiter);
      });
    else this.running += 1;
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter (the count stays), else it is freed.
      const next = this.waiting.shift();
      if (next) next.go();
      else this.running -= 1;
    }
  }
}
