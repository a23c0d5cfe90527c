import type { RequestHandler } from 'express';

/**
 * Lets a stopping API finish what it started and start nothing new. Closing the HTTP server only
 * stops new connections: a client's kept-alive connection can still bring a request while the
 * API's Redis connections are being released, and that request would be answered 503 by a
 * process that is merely going away (the run console reconnecting its stream did exactly that).
 * Such a request gets its connection closed instead, so the client retries against a live
 * process; requests already in flight get a bounded time to finish before Redis is released.
 */
export class ShutdownGate {
  private closing = false;
  private inFlight = 0;
  private drained: (() => void) | undefined;

  /** First in the chain: counts requests in flight, and turns new ones away once closing. */
  readonly middleware: RequestHandler = (req, res, next) => {
    if (this.closing) {
      // Nothing was done for it: a retry elsewhere is safe, whatever the method.
      req.socket.destroy();
      return;
    }
    this.inFlight += 1;
    res.once('close', () => {
      this.inFlight -= 1;
      if (this.inFlight === 0) this.drained?.();
    });
    next();
  };

  /** From now on, new requests are turned away. */
  close(): void {
    this.closing = true;
  }

  /** Resolves once no request is in flight, or after `graceMs`. */
  async drain(graceMs: number): Promise<void> {
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, graceMs);
      timer.unref();
      this.drained = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
