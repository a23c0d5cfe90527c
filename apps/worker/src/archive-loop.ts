import type { BatonRuntime } from '@baton/runtime';
import type { Logger } from 'pino';
import type { WorkerConfig } from './config.ts';

/** Batches one tick may write before it lets the event loop breathe (the next tick goes on). */
const BATCHES_PER_TICK = 50;
/** A busy or failing archiver says how it is doing at most this often. */
const REPORT_EVERY_MS = 30_000;

/**
 * Pumps the archiver (@baton/runtime archive/archiver.ts) from this worker process when
 * ARCHIVE_URL is set: every ARCHIVE_INTERVAL_MS, batches until the pending list is empty (one
 * process at a time: the others find the lock taken). A failure (PostgreSQL away) leaves the
 * runs pending and is retried at the next tick. Null without an archive.
 */
export function startArchiving(
  rt: BatonRuntime,
  config: WorkerConfig,
  logger: Logger,
): NodeJS.Timeout | null {
  const archiver = rt.archiver;
  if (!archiver) return null;
  let running = false;
  let archived = 0;
  let lastReport = 0;
  let failing = false;
  const tick = async (): Promise<void> => {
    for (let i = 0; i < BATCHES_PER_TICK; i += 1) {
      const pass = await archiver.pump();
      if (pass === null) return;
      archived += pass.archived;
      const now = Date.now();
      if (failing || (archived > 0 && now - lastReport >= REPORT_EVERY_MS)) {
        logger.info(
          { archived, pending: pass.pending, lagMs: pass.lagMs, dropped: pass.dropped },
          failing ? 'archive: writing again' : 'archive: runs archived',
        );
        failing = false;
        archived = 0;
        lastReport = now;
      }
      if (pass.archived + pass.dropped === 0 || pass.pending === 0) return;
    }
  };
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    tick()
      .catch((err: unknown) => {
        const now = Date.now();
        if (!failing || now - lastReport >= REPORT_EVERY_MS) {
          logger.warn({ err }, 'archive: pass failed; the runs stay pending and are retried');
          lastReport = now;
        }
        failing = true;
      })
      .finally(() => {
        running = false;
      });
  }, config.ARCHIVE_INTERVAL_MS);
  return timer;
}
