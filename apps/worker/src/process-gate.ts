/**
 * A process-wide bound on work in flight (a counting semaphore). Steps and tools of a worker
 * come from K shard queues, one BullMQ Worker each; BullMQ's concurrency is per Worker, so
 * WORKER_CONCURRENCY and TOOL_CONCURRENCY are enforced here, across all of them.
 */
export class ProcessGate {
  private readonly limit: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(limit: number) {
    this.limit = limit;
  }

  get inFlight(): number {
    return this.running;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit)
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
      });
    else this.running += 1;
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter (the count stays), else it is freed.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
