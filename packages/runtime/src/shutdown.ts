import type { Logger } from 'pino';

/**
 * What a stop may take beyond its grace period (aborting what is left, closing connections)
 * before the process exits anyway. Fixed, so that an orchestrator's kill timeout (or npm start's
 * supervisor) can be set to the grace plus this and a little more.
 */
const SHUTDOWN_MARGIN_MS = 5_000;

/**
 * Stops the process once on SIGTERM/SIGINT: runs `stop`, then exits 0 (or 1 if stopping failed).
 * Whatever `stop` waits for (a Redis that is gone, a connection that never closes), the process
 * exits by `graceMs` + SHUTDOWN_MARGIN_MS, with code 1 and a line that says so: an orchestrator's
 * stop, a supervisor and a test's teardown all count on SIGTERM ending the process. Further
 * signals while stopping are ignored (Ctrl-C reaches the whole process group, and wrappers such
 * as npm start's supervisor pass a SIGTERM on right after it).
 */
export function exitOnSignals(logger: Logger, stop: () => Promise<void>, graceMs: number): void {
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'shutting down');
      const limitMs = graceMs + SHUTDOWN_MARGIN_MS;
      // Not unref'd: this timer is what ends a stop that waits on nothing that keeps the loop up.
      setTimeout(() => {
        logger.error(
          { graceMs, marginMs: SHUTDOWN_MARGIN_MS },
          `shutdown did not finish within ${String(limitMs)} ms (SHUTDOWN_GRACE_MS + ${String(SHUTDOWN_MARGIN_MS)} ms); exiting`,
        );
        process.exit(1);
      }, limitMs);
      stop().then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}
