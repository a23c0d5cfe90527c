import { Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { bullPrefix, type BatonRuntime } from '@baton/runtime';
import {
  SCHEDULE_QUEUE,
  ScheduleFirer,
  ScheduleService,
  workerBackend,
  type ScheduleJobData,
} from '@baton/runtime/internal';
import type { WorkerConfig } from './config.ts';

/**
 * Fires schedules in a worker process: takes the firing jobs that BullMQ's job schedulers put in
 * the `schedules` queue, and repairs schedules whose job scheduler is missing or stale (a crash
 * between a record write and the queue write): the whole index when the worker starts, then a
 * batch per RECONCILE_INTERVAL_MS.
 */
export class ScheduleWorker {
  private readonly rt: BatonRuntime;
  private readonly config: WorkerConfig;
  private readonly logger: Logger;
  private readonly schedules: ScheduleService;
  private readonly firer: ScheduleFirer;
  /** The BullMQ worker of the schedules queue, once started. */
  worker?: Worker<ScheduleJobData>;
  private timer?: NodeJS.Timeout;

  constructor(runtime: BatonRuntime, config: WorkerConfig, logger: Logger) {
    this.rt = runtime;
    this.config = config;
    this.logger = logger.child({ component: 'schedules' });
    this.schedules = new ScheduleService(runtime);
    this.firer = new ScheduleFirer(runtime, this.schedules);
  }

  start(): Worker<ScheduleJobData> {
    const { config } = this;
    const worker = new Worker<ScheduleJobData>(
      SCHEDULE_QUEUE,
      async (job) => {
        const result = await this.firer.process(job);
        if (result.kind === 'fired' && result.firing.outcome !== 'created')
          this.logger.info(
            {
              scheduleId: job.data.scheduleId,
              outcome: result.firing.outcome,
              error: result.firing.error?.code,
            },
            'schedule firing created no new active run',
          );
        return result.kind === 'skipped' ? result.reason : (result.firing.outcome ?? 'none');
      },
      {
        connection: this.rt.connection,
        prefix: bullPrefix(config.BATON_PREFIX),
        concurrency: config.SCHEDULE_CONCURRENCY,
        // Woken by the queue's marker when a firing is due: this only sets idle polling.
        drainDelay: 30,
        lockDuration: config.JOB_LOCK_MS,
        stalledInterval: config.STALLED_INTERVAL_MS,
        maxStalledCount: config.MAX_STALLS,
      },
      workerBackend,
    );
    worker.on('error', (err) => {
      if (!this.rt.outage.connectionError(err, 'schedules'))
        this.logger.error({ err }, 'schedule worker error');
    });
    worker.on('failed', (job: Job<ScheduleJobData> | undefined, err) => {
      if (!job || job.attemptsMade < (job.opts.attempts ?? 1)) return;
      this.firer
        .recordFailure(job, err)
        .catch((e: unknown) => this.logger.warn({ err: e }, 'could not record a failed firing'));
    });
    this.worker = worker;
    const repair = (all: boolean): void => {
      this.schedules
        .repair({ all, batch: config.RECONCILE_BATCH })
        .then((r) => {
          if (r.repaired > 0) this.logger.info(r, 'schedules repaired');
        })
        .catch((err: unknown) => this.logger.warn({ err }, 'schedule repair failed'));
    };
    repair(true);
    this.timer = setInterval(() => repair(false), config.RECONCILE_INTERVAL_MS);
    this.timer.unref();
    return worker;
  }

  /** Stops the repair timer; the BullMQ worker is closed with the others. */
  stopTimers(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
