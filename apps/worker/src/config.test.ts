import { describe, expect, it } from 'vitest';
import { ConfigError } from '@baton/runtime';
import { ENV_KEYS } from '@baton/runtime/internal';
import { WorkerConfigSchema, loadWorkerConfig } from './config.ts';
import { compileWorkerConfig } from './create-worker.ts';

describe('worker configuration', () => {
  it('reads only variables of the one list', () => {
    const listed = new Set<string>([...ENV_KEYS.runtime, ...ENV_KEYS.worker]);
    for (const name of Object.keys(WorkerConfigSchema.shape)) expect(listed).toContain(name);
  });

  it('an invalid variable is a ConfigError naming it and what it accepts (not the raw zod error)', () => {
    expect(() => loadWorkerConfig({ WORKER_CONCURRENCY: 'many' })).toThrow(ConfigError);
    expect(() => loadWorkerConfig({ WORKER_CONCURRENCY: 'many' })).toThrow(
      /^invalid configuration: WORKER_CONCURRENCY="many": .*\(accepts a whole number from 1 to 1000 \(default \d+\)\); fix the variable/,
    );
  });

  it('never echoes the Redis URL, whose user info may hold a password', () => {
    expect(() =>
      loadWorkerConfig({ REDIS_URL: 'redis://:hunter2@', BATON_TASK_QUEUE: 'a b' }),
    ).toThrow(/REDIS_URL: /);
    expect(() => loadWorkerConfig({ REDIS_URL: 'redis://:hunter2@' })).not.toThrow(/hunter2/);
  });
});

describe('createWorker options', () => {
  it('take camelCase names, mapped onto the parsed configuration', () => {
    const config = compileWorkerConfig({
      redis: 'redis://127.0.0.1:7000',
      prefix: 'p',
      config: { workerConcurrency: 8, taskQueue: 'gpu', logLevel: 'warn', reconciler: false },
    });
    expect(config).toEqual(
      WorkerConfigSchema.parse({
        REDIS_URL: 'redis://127.0.0.1:7000',
        BATON_PREFIX: 'p',
        WORKER_CONCURRENCY: '8',
        BATON_TASK_QUEUE: 'gpu',
        LOG_LEVEL: 'warn',
        RECONCILER: 'false',
      }),
    );
  });

  it('still take the variable names for one release', () => {
    const config = compileWorkerConfig({ redis: 'redis://h:1', config: { WORKER_CONCURRENCY: 3 } });
    expect(config.WORKER_CONCURRENCY).toBe(3);
  });

  it('a bad option is a ConfigError naming the option as written', () => {
    expect(() =>
      compileWorkerConfig({ redis: 'redis://h:1', config: { toolConcurrency: 0 } }),
    ).toThrow(/^invalid configuration: toolConcurrency="0": .*fix the option/);
  });
});
