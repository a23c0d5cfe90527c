/**
 * Issue 20 item 14: a worker and an API started while Redis cannot be reached say so in one line
 * (where they try, password hidden; that they keep retrying; REDIS_URL to check), then only a
 * reminder now and then, and one line when they connect. Real processes against a closed port;
 * then redis-server starts on that port and both become ready.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnApi, stopAllApiProcesses } from '@baton/testing/api-process';
import { startRedisProcess, type RedisProcess } from '@baton/testing/redis-process';
import { testPrefix, waitFor } from '@baton/testing/worker-harness';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PASSWORD = 'Pw9c1e7b3d5a';
/** Reminders every 2 s here (30 s by default), so the test sees several of them. */
const REMINDER_MS = '2000';

/**
 * A port nothing listens on, outside the kernel's ephemeral range (32768 and up), so no other
 * test's server started on port 0 can take it while this test counts on it being closed.
 */
async function closedPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const refused = await new Promise<boolean>((done) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        done(false);
      });
      socket.once('error', () => done(true));
    });
    if (refused) return port;
  }
}

let redis: RedisProcess | undefined;
const children: { kill: (s: NodeJS.Signals) => void }[] = [];

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await stopAllApiProcesses();
  await redis?.stop();
});

/** Lines a process printed, with a way to wait for one. */
function recorder() {
  const lines: string[] = [];
  return {
    lines,
    push: (line: string) => lines.push(line),
    count: (re: RegExp) => lines.filter((l) => re.test(l)).length,
    until: (what: string, pred: (lines: readonly string[]) => boolean, timeoutMs = 60_000) =>
      waitFor(() => Promise.resolve(pred(lines) ? true : null), timeoutMs, what),
  };
}

const CANNOT_REACH =
  /cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ .*retrying until it answers.*REDIS_URL/;
const REMINDER =
  /still cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ after \d+ s.*REDIS_URL/;
const CONNECTED = /connected to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+/;

function expectQuietOutage(name: string, lines: readonly string[]): void {
  const text = lines.join('\n');
  expect(text, name).not.toContain(PASSWORD);
  expect(text, `${name} printed a stack trace`).not.toMatch(/"stack"|\n\s+at /);
  expect(
    lines.filter((l) => CANNOT_REACH.test(l)),
    name,
  ).toHaveLength(1);
  expect(lines.filter((l) => REMINDER.test(l)).length, name).toBeGreaterThanOrEqual(2);
  // Besides the first line and the reminders, at most what each process says once at start.
  const other = lines.filter((l) => !CANNOT_REACH.test(l) && !REMINDER.test(l));
  expect(other.length, `${name}: ${other.join('\n')}`).toBeLessThanOrEqual(3);
}

describe('started with Redis unreachable', () => {
  it('worker and API print one line, then reminders, then connect when Redis starts', async () => {
    const port = await closedPort();
    const redisUrl = `redis://:${PASSWORD}@127.0.0.1:${String(port)}`;
    const prefix = testPrefix();

    const worker = recorder();
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    Object.assign(env, {
      REDIS_URL: redisUrl,
      BATON_PREFIX: prefix,
      BATON_AGENTS: 'demo',
      LOG_LEVEL: 'info',
      REDIS_RETRY_REMINDER_MS: REMINDER_MS,
    });
    delete env['WORKER_ID'];
    const proc = spawn(process.execPath, ['apps/worker/src/main.ts'], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(proc);
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    createInterface({ input: proc.stdout }).on('line', worker.push);
    createInterface({ input: proc.stderr }).on('line', worker.push);

    const api = recorder();
    const apiProc = await spawnApi({
      redisUrl,
      prefix,
      keys: 't:some-long-api-key',
      env: { LOG_LEVEL: 'info', REDIS_RETRY_REMINDER_MS: REMINDER_MS, EVENT_METRICS: 'true' },
      onLine: api.push,
    });
    // The API listens without Redis; it is not ready, and says why.
    const notReady = await fetch(`${apiProc.url}/readyz`);
    expect(notReady.status).toBe(503);

    // The window: until each process has reminded twice.
    await worker.until(
      'two reminders from the worker',
      (l) => l.filter((x) => REMINDER.test(x)).length >= 2,
    );
    await api.until(
      'two reminders from the API',
      (l) => l.filter((x) => REMINDER.test(x)).length >= 2,
    );
    expectQuietOutage('worker', worker.lines);
    expectQuietOutage(
      'api',
      api.lines.filter((l) => !l.startsWith('LISTENING ')),
    );
    expect(worker.lines.some((l) => l.startsWith('READY '))).toBe(false);

    redis = await startRedisProcess({ aof: 'off', port });
    await worker.until('the worker to be ready', (l) => l.some((x) => x.startsWith('READY ')));
    await worker.until('the worker to say it connected', (l) => l.some((x) => CONNECTED.test(x)));
    await api.until('the API to say it connected', (l) => l.some((x) => CONNECTED.test(x)));
    await waitFor(
      async () => ((await fetch(`${apiProc.url}/readyz`)).status === 200 ? true : null),
      30_000,
      'the API to be ready',
    );
    // Connected: no more reminders, and still no stack trace.
    const reminders = api.count(REMINDER) + worker.count(REMINDER);
    expect(api.count(CANNOT_REACH) + worker.count(CANNOT_REACH)).toBe(2);
    expect([...api.lines, ...worker.lines].join('\n')).not.toContain(PASSWORD);

    // Both stop on SIGTERM.
    proc.kill('SIGTERM');
    apiProc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect((await apiProc.exited).code).toBe(0);
    expect(api.count(REMINDER) + worker.count(REMINDER)).toBe(reminders);
  }, 120_000);

  it('an API that cannot reach Redis still stops on SIGTERM', async () => {
    const api = recorder();
    const proc = await spawnApi({
      redisUrl: `redis://127.0.0.1:${String(await closedPort())}`,
      prefix: testPrefix(),
      keys: 't:some-long-api-key',
      env: { EVENT_METRICS: 'true' },
      onLine: api.push,
    });
    proc.kill('SIGTERM');
    const exit = await proc.exited;
    expect(exit, api.lines.join('\n')).toEqual({ code: 0, signal: null });
  }, 60_000);
});
