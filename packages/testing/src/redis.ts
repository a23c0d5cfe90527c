/**
 * Test fixture: an isolated Redis for integration tests.
 *
 * `startRedis()` picks the first of:
 *   (a) REDIS_URL from the environment (stop() is a no-op: we don't own it);
 *   (b) a private `redis-server` from PATH on a free loopback port, no persistence,
 *       fresh temp dir (stop() shuts it down and removes the dir);
 *   (c) a Redis container via @testcontainers/redis, if a Docker engine answers;
 *   (d) otherwise it throws, naming the three ways to get Redis.
 *
 * The shared instance on 127.0.0.1:6379 is never used implicitly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runTempPrefix } from './run-processes.ts';

export type RedisSource = 'env' | 'redis-server' | 'testcontainers';

export interface RedisHandle {
  /** redis://host:port URL for clients (ioredis, BullMQ connection options). */
  url: string;
  /** Where this Redis came from. */
  source: RedisSource;
  /** Stop the server if this fixture started it; idempotent. */
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Honour REDIS_URL from the environment (default true). */
  useEnv?: boolean;
  /** Allow falling back to Docker/testcontainers (default true). */
  allowContainers?: boolean;
  /** Container image for the testcontainers fallback (default redis:7-alpine). */
  image?: string;
  /** How long to wait for the server to answer PING, in ms (default 5000). */
  readyTimeoutMs?: number;
}

const MISSING_REDIS_HELP =
  'No Redis available for tests. Provide one of:\n' +
  '  1. REDIS_URL=redis://host:port pointing at a Redis you may flush (e.g. a dedicated db index),\n' +
  '  2. a `redis-server` binary on PATH (Debian/Ubuntu: `apt-get install redis-server`;\n' +
  '     macOS: `brew install redis`) — the tests start their own private instance,\n' +
  '  3. a running Docker engine (tests then start a redis:7 container via testcontainers).';

export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisHandle> {
  const envUrl = process.env['REDIS_URL'];
  if ((opts.useEnv ?? true) && envUrl !== undefined && envUrl !== '') {
    return { url: envUrl, source: 'env', stop: async () => {} };
  }

  const bin = await findRedisServer();
  if (bin !== undefined) {
    return startRedisServer({ bin, readyTimeoutMs: opts.readyTimeoutMs });
  }

  let containerError: unknown;
  if (opts.allowContainers ?? true) {
    try {
      return await startRedisContainer(opts.image ?? 'redis:7-alpine');
    } catch (err) {
      containerError = err;
    }
  }

  const reason =
    containerError === undefined
      ? ''
      : `\n(Docker/testcontainers attempt: ${errorMessage(containerError)})`;
  throw new Error(MISSING_REDIS_HELP + reason);
}

/** Path of `redis-server` (REDIS_SERVER_BIN overrides PATH lookup), or undefined. */
export async function findRedisServer(): Promise<string | undefined> {
  const override = process.env['REDIS_SERVER_BIN'];
  if (override !== undefined && override !== '') return override;
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'redis-server');
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('freePort: unexpected server address'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A unique, colon-free key prefix for isolating one test's keys/queues, e.g. as
 * BullMQ's `prefix` option or (with a trailing ':') as ioredis' `keyPrefix`.
 */
export function uniquePrefix(label = 't'): string {
  const safe = label.replace(/[^A-Za-z0-9_-]/g, '_');
  return `baton-test-${safe}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/**
 * Resolves true if something at `url` answers PING within `timeoutMs`. With `expectPid`,
 * the server must also report that process id (so a different server that happens to own
 * the port does not count).
 */
export async function pingRedis(
  url: string,
  timeoutMs = 500,
  expectPid?: number,
): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => {}); // failures are reported through the return value
  try {
    await client.connect();
    if ((await client.ping()) !== 'PONG') return false;
    if (expectPid === undefined) return true;
    const info = await client.info('server');
    return new RegExp(`^process_id:${expectPid}\\s*$`, 'm').test(info);
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

export interface StartRedisServerOptions {
  bin?: string;
  port?: number;
  readyTimeoutMs?: number | undefined;
}

/** Spawn a private, non-persistent redis-server on 127.0.0.1 (case (b) of startRedis). */
export async function startRedisServer(opts: StartRedisServerOptions = {}): Promise<RedisHandle> {
  const bin = opts.bin ?? (await findRedisServer());
  if (bin === undefined) throw new Error(MISSING_REDIS_HELP);
  // A port from freePort() can be grabbed by someone else before redis binds it: retry.
  const attempts = opts.port === undefined ? 3 : 1;
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    const port = opts.port ?? (await freePort());
    try {
      return await spawnRedisServer(bin, port, opts.readyTimeoutMs ?? 5000);
    } catch (err) {
      lastError = err;
      if (!errorMessage(err).includes('Address already in use')) break;
    }
  }
  throw lastError;
}

async function spawnRedisServer(
  bin: string,
  port: number,
  readyTimeoutMs: number,
): Promise<RedisHandle> {
  const dir = await mkdtemp(runTempPrefix('baton-redis'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--protected-mode',
    'yes',
    '--logfile',
    '',
  ];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-8192);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  let exited = false;
  let spawnError: Error | undefined;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', () => {
      exited = true;
      resolve();
    });
    child.once('error', (err) => {
      spawnError = err;
      exited = true;
      resolve();
    });
  });
  // If the test process dies without teardown, don't leave the server behind.
  const killOnExit = (): void => {
    if (!exited) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  const url = `redis://127.0.0.1:${port}`;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await terminate(child, () => exited, exitPromise);
    process.removeListener('exit', killOnExit);
    await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exited) {
      await stop();
      const why =
        spawnError !== undefined ? spawnError.message : `exited with code ${child.exitCode}`;
      throw new Error(
        `redis-server (${bin}) on port ${port} ${why} before answering PING.\n--- redis-server output ---\n${output}`,
      );
    }
    if (await pingRedis(url, 250, child.pid)) break;
    if (Date.now() >= deadline) {
      await stop();
      throw new Error(
        `redis-server (${bin}) on port ${port} did not answer PING within ${readyTimeoutMs} ms.\n--- redis-server output ---\n${output}`,
      );
    }
    await sleep(50);
  }
  return { url, source: 'redis-server', stop };
}

async function terminate(
  child: ChildProcess,
  isExited: () => boolean,
  exitPromise: Promise<void>,
): Promise<void> {
  if (isExited()) return;
  child.kill('SIGTERM'); // with --save "" this exits without writing anything
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  try {
    await exitPromise;
  } finally {
    clearTimeout(timer);
  }
}

async function startRedisContainer(image: string): Promise<RedisHandle> {
  // Loaded lazily: testcontainers is heavy and only needed when there is no local redis-server.
  const { getContainerRuntimeClient } = await import('testcontainers');
  await withTimeout(getContainerRuntimeClient(), 15_000, 'no Docker engine answered');
  const { RedisContainer } = await import('@testcontainers/redis');
  const container = await new RedisContainer(image).start();
  let stopped = false;
  return {
    url: container.getConnectionUrl(),
    source: 'testcontainers',
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await container.stop();
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
