import type { AgentDefinition, Clock } from '@baton/core';
import { systemClock, BatonRuntime } from '@baton/runtime';
import { BatonWorker, WorkerConfigSchema, type WorkerConfig } from '@baton/worker';
import type { Checkpoint } from '@baton/protocol';
import { pino } from 'pino';
import { uniquePrefix } from './redis.ts';

export const silentLogger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

/** Worker config for tests: short locks and leases so crash recovery takes seconds, not minutes. */
export function testConfig(
  redisUrl: string,
  prefix: string,
  overrides: Partial<Record<keyof WorkerConfig, string>> = {},
): WorkerConfig {
  return WorkerConfigSchema.parse({
    REDIS_URL: redisUrl,
    BATON_PREFIX: prefix,
    WORKER_CONCURRENCY: '16',
    TOOL_CONCURRENCY: '16',
    LEASE_TTL_MS: '2000',
    JOB_LOCK_MS: '2000',
    STALLED_INTERVAL_MS: '1000',
    RECONCILE_INTERVAL_MS: '1000',
    SHUTDOWN_GRACE_MS: '2000',
    LOG_LEVEL: 'silent',
    ...overrides,
  });
}

export function testPrefix(): string {
  return (
    uniquePrefix()
      .replace(/[^a-z0-9-]/gi, '')
      .slice(0, 24) || 'test'
  );
}

export interface Harness {
  readonly prefix: string;
  readonly config: WorkerConfig;
  readonly workers: BatonWorker[];
  /** A client-side runtime (what the API uses): RunService, store, subscriber source. */
  readonly client: BatonRuntime;
  addWorker(agents?: readonly AgentDefinition[]): Promise<BatonWorker>;
  stop(): Promise<void>;
}

export async function startHarness(
  redisUrl: string,
  agents: readonly AgentDefinition[],
  opts: {
    workers?: number;
    clock?: Clock;
    overrides?: Partial<Record<keyof WorkerConfig, string>>;
  } = {},
): Promise<Harness> {
  const prefix = testPrefix();
  const config = testConfig(redisUrl, prefix, opts.overrides);
  const workers: BatonWorker[] = [];
  const clock = opts.clock ?? systemClock;
  const addWorker = async (list: readonly AgentDefinition[] = agents): Promise<BatonWorker> => {
    const worker = new BatonWorker({ config, agents: list, logger: silentLogger, clock });
    await worker.start();
    workers.push(worker);
    return worker;
  };
  for (let i = 0; i < (opts.workers ?? 1); i += 1) await addWorker();
  const client = new BatonRuntime({ config, logger: silentLogger, clock });
  return {
    prefix,
    config,
    workers,
    client,
    addWorker,
    stop: async () => {
      await Promise.all(workers.map((w) => w.stop(500)));
      await client.close();
    },
  };
}

export async function waitFor<T>(
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Waits until the run's status is one of `statuses` and no job is about to change it. */
export async function waitForStatus(
  h: Harness,
  runId: string,
  statuses: Checkpoint['status'][],
  timeoutMs = 15_000,
): Promise<Checkpoint> {
  return waitFor(
    async () => {
      const stored = await h.client.store.load(runId);
      return stored && statuses.includes(stored.checkpoint.status) ? stored.checkpoint : null;
    },
    timeoutMs,
    `run ${runId} to be ${statuses.join('|')}`,
  );
}
