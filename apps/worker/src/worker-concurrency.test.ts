import { describe, expect, it } from 'vitest';
import {
  MEASURED_BYTES_PER_IN_FLIGHT_STEP,
  defaultWorkerConcurrency,
} from './worker-concurrency.ts';
import { WorkerConfigSchema } from './config.ts';

describe('defaultWorkerConcurrency', () => {
  it('is the CPU bound (256) when a quarter of the heap holds more in-flight steps', () => {
    expect(defaultWorkerConcurrency(4 * 1024 ** 3)).toBe(256);
  });

  it('shrinks with the heap limit: a quarter of it over the measured memory per step', () => {
    const heap = 100 * 4 * MEASURED_BYTES_PER_IN_FLIGHT_STEP;
    expect(defaultWorkerConcurrency(heap)).toBe(100);
    expect(defaultWorkerConcurrency(heap + 4 * MEASURED_BYTES_PER_IN_FLIGHT_STEP - 1)).toBe(100);
  });

  it('never goes below the old fixed default of 16', () => {
    expect(defaultWorkerConcurrency(1024 * 1024)).toBe(16);
  });

  it('is what the worker config defaults to; an explicit value wins', () => {
    const base = { REDIS_URL: 'redis://127.0.0.1:6379' };
    expect(WorkerConfigSchema.parse(base).WORKER_CONCURRENCY).toBe(defaultWorkerConcurrency());
    expect(WorkerConfigSchema.parse({ ...base, WORKER_CONCURRENCY: '8' }).WORKER_CONCURRENCY).toBe(
      8,
    );
  });
});
