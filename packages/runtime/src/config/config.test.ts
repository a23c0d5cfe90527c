import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isBatonError } from '@baton/protocol';
import { ConfigError } from '../errors/config-error.ts';
import { ENV_KEYS, allEnvKeys } from './env-keys.ts';
import { accepts, parseEnv } from './parse-env.ts';
import { runtimeConfigShape, withRuntimeDefaults } from './runtime-config.ts';
import { compileSdkOptions, optionName } from './sdk-options.ts';

const runtimeSchema = z.object(runtimeConfigShape);

function thrown(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('the list of variables', () => {
  it('is exactly what docs/configuration.md documents', () => {
    const doc = readFileSync(new URL('../../../../docs/configuration.md', import.meta.url), 'utf8');
    // Every `UPPER_CASE` name in backticks, but PATH (where redis-server is looked up), the
    // deprecation warning's code and the `BATON_` the SDK's option names drop.
    const notVariables = new Set(['PATH', 'BATON_CONFIG_VARIABLE_NAMES', 'BATON_']);
    const documented = new Set(
      [...doc.matchAll(/`([A-Z][A-Z0-9_]+)`/g)]
        .map((m) => m[1] ?? '')
        .filter((name) => !notVariables.has(name)),
    );
    expect([...documented].sort()).toEqual([...allEnvKeys()].sort());
  });

  it('holds every setting of the shared runtime schema', () => {
    const listed = new Set<string>(ENV_KEYS.runtime);
    for (const name of Object.keys(runtimeConfigShape)) expect(listed).toContain(name);
  });
});

describe('parseEnv', () => {
  it('gives every setting its default from the schema', () => {
    const config = parseEnv(runtimeSchema, {});
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(config.ARCHIVE_HOLD_SECONDS).toBe(7 * 86_400);
    expect(config.ARCHIVE_BATCH).toBe(200);
    expect(config.ARCHIVE_INTERVAL_MS).toBe(500);
    expect(config.REDIS_RETRY_REMINDER_MS).toBe(30_000);
    expect(config.WEBHOOK_ATTEMPTS).toBe(12);
    expect(config.THREAD_MAX_MESSAGES).toBe(5_000);
  });

  it('throws a ConfigError naming the variable, its value and what it accepts', () => {
    const error = thrown(() => parseEnv(runtimeSchema, { TOOL_ATTEMPTS: 'lots' }));
    expect(isBatonError(error) && error.code).toBe('config');
    expect(error.message).toMatch(
      /^invalid configuration: TOOL_ATTEMPTS="lots": .*\(accepts a whole number from 1 to 20 \(default 3\)\); fix the variable or unset it/,
    );
  });

  it('names every bad variable at once', () => {
    const error = thrown(() =>
      parseEnv(runtimeSchema, { BATON_DURABILITY: 'always', THREAD_TTL_SECONDS: '0' }),
    );
    expect(error.message).toContain('BATON_DURABILITY="always"');
    expect(error.message).toContain('accepts one of relaxed, strict');
    expect(error.message).toContain('THREAD_TTL_SECONDS="0"');
  });

  it('never prints a secret: a Redis password, an archive URL', () => {
    const error = thrown(() =>
      parseEnv(runtimeSchema, {
        REDIS_URL: 'http://user:hunter2@redis.example:6379',
        ARCHIVE_URL: 'mysql://admin:s3cret@db.example/baton',
      }),
    );
    expect(error.message).toContain('REDIS_URL');
    expect(error.message).toContain('ARCHIVE_URL');
    expect(error.message).not.toContain('hunter2');
    expect(error.message).not.toContain('s3cret');
  });

  it('describes what a setting accepts from its schema', () => {
    expect(accepts(runtimeConfigShape.BATON_QUEUE_SHARDS)).toBe(
      'a whole number from 1 to 256 (default 1)',
    );
    expect(accepts(runtimeConfigShape.BATON_WEBHOOK_ALLOW_PRIVATE)).toBe(
      'one of 0, 1, true, false (default false)',
    );
    expect(accepts(runtimeConfigShape.REDIS_TLS_CA_FILE)).toBe(
      'text of at least 1 characters, or unset',
    );
  });
});

describe('SDK options', () => {
  it('are the variables in camelCase, without BATON_', () => {
    expect(optionName('WORKER_CONCURRENCY')).toBe('workerConcurrency');
    expect(optionName('BATON_TASK_QUEUE')).toBe('taskQueue');
    expect(optionName('LOG_LEVEL')).toBe('logLevel');
    expect(optionName('THREAD_HISTORY_MAX_BYTES')).toBe('threadHistoryMaxBytes');
  });

  it('no two variables of one process share an option name', () => {
    for (const names of [
      [...ENV_KEYS.runtime, ...ENV_KEYS.worker],
      [...ENV_KEYS.runtime, ...ENV_KEYS.api],
    ]) {
      const unique = [...new Set(names)];
      expect(new Set(unique.map(optionName)).size).toBe(unique.length);
    }
  });

  it('map onto the parsed configuration with the schema defaults', () => {
    const config = compileSdkOptions(
      runtimeSchema,
      { toolAttempts: 5, queueShards: 4, webhookAllowPrivate: true },
      { caller: 'test', fixed: { BATON_PREFIX: 'p' } },
    );
    expect(config.TOOL_ATTEMPTS).toBe(5);
    expect(config.BATON_QUEUE_SHARDS).toBe(4);
    expect(config.BATON_WEBHOOK_ALLOW_PRIVATE).toBe(true);
    expect(config.BATON_PREFIX).toBe('p');
    expect(config.EVENT_RETENTION_SECONDS).toBe(86_400);
  });

  it('still take the variable names (deprecated), camelCase winning over them', () => {
    const config = compileSdkOptions(
      runtimeSchema,
      { TOOL_ATTEMPTS: 7, JOB_RETENTION_SECONDS: 10, jobRetentionSeconds: 20 },
      { caller: 'test' },
    );
    expect(config.TOOL_ATTEMPTS).toBe(7);
    expect(config.JOB_RETENTION_SECONDS).toBe(20);
  });

  it('a bad option throws ConfigError naming the option as written', () => {
    const error = thrown(() =>
      compileSdkOptions(runtimeSchema, { toolAttempts: 99 }, { caller: 'test' }),
    );
    expect(error.message).toMatch(/^invalid configuration: toolAttempts="99": .*fix the option/);
    expect(error.message).toContain('accepts a whole number from 1 to 20');
  });
});

describe('withRuntimeDefaults', () => {
  it('fills what a configuration built in code leaves out, or sets undefined', () => {
    const config = withRuntimeDefaults({ BATON_PREFIX: 'x', THREAD_MAX_BYTES: undefined });
    expect(config.BATON_PREFIX).toBe('x');
    expect(config.THREAD_MAX_BYTES).toBe(8 * 1024 * 1024);
    expect(config.WEBHOOK_CONCURRENCY).toBe(8);
  });
});
