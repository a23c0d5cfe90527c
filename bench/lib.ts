/**
 * Shared helpers of the benchmark suite: the scenario contract, env knobs, progress output,
 * and cheap Redis-side accounting (INFO commandstats / cpu deltas).
 *
 * Results go to stdout as one JSON document (bench/run.ts); everything else goes to stderr.
 */
import { cpus, loadavg } from 'node:os';
import type { Redis } from 'ioredis';
import { isClusterUrl, mastersOf, testRedis, type AnyRedis } from '@baton/testing/redis-client';

/** What every scenario gets from bench/run.ts. */
export interface BenchContext {
  /** URL of the isolated Redis (undefined when no scenario needed one). */
  readonly redisUrl: string | undefined;
  /** Results of the scenarios that ran before this one (for cross-scenario ratios). */
  readonly results: Readonly<Record<string, unknown>>;
  /** Progress line on stderr. */
  log(message: string): void;
}

export interface Scenario {
  readonly name: string;
  readonly description: string;
  /** When true, bench/run.ts starts (or reuses REDIS_URL) an isolated Redis before running it. */
  readonly needsRedis: boolean;
  /** Returns a JSON-able result; throws (with a clear message) on failure. Never asserts timing. */
  run(ctx: BenchContext): Promise<Record<string, unknown>>;
}

export class BenchError extends Error {
  override name = 'BenchError';
}

/** A positive integer from the environment, or the default. */
export function envInt(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new BenchError(`${name} must be an integer >= ${min} (got "${raw}")`);
  return n;
}

/** A comma-separated list of non-negative integers from the environment. */
export function envIntList(name: string, fallback: readonly number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined) return [...fallback];
  if (raw.trim() === '') return [];
  return raw.split(',').map((part) => {
    const n = Number(part.trim());
    if (!Number.isInteger(n) || n < 0)
      throw new BenchError(`${name} must be a comma-separated list of integers (got "${raw}")`);
    return n;
  });
}

export function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

export function machine(): Record<string, unknown> {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model ?? 'unknown',
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    // Other processes on the box skew absolute numbers; the load average says how busy it was.
    loadAverage1m: round(loadavg()[0] ?? 0),
  };
}

export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `done` until it returns true; throws a BenchError naming `what` after timeoutMs. */
export async function pollUntil(
  done: () => Promise<boolean>,
  timeoutMs: number,
  what: () => string,
  intervalMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await done()) return;
    if (Date.now() > deadline) throw new BenchError(`timed out after ${timeoutMs} ms: ${what()}`);
    await sleep(intervalMs);
  }
}

/** Rejects with a BenchError if `promise` takes longer than timeoutMs. */
export async function withTimeout<T>(
  promise: Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new BenchError(`timed out after ${timeoutMs} ms: ${what}`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `fn` over items with at most `limit` in flight. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Redis-side accounting
// ---------------------------------------------------------------------------------------------

export interface RedisSnapshot {
  /** command -> calls (INFO commandstats; includes commands issued from inside Lua scripts). */
  readonly calls: Record<string, number>;
  /** command -> microseconds spent. */
  readonly usec: Record<string, number>;
  /** total_commands_processed (INFO stats). */
  readonly totalCommands: number;
  /** used_cpu_user + used_cpu_sys of the server, seconds. */
  readonly cpuSeconds: number;
  /** total_net_input_bytes / total_net_output_bytes (INFO stats). */
  readonly netInBytes: number;
  readonly netOutBytes: number;
}

/** On a cluster, the sum over its masters (what the system under test made them do). */
export async function redisSnapshot(redis: AnyRedis): Promise<RedisSnapshot> {
  const parts = await Promise.all(mastersOf(redis).map(nodeSnapshot));
  const calls: Record<string, number> = {};
  const usec: Record<string, number> = {};
  for (const p of parts) {
    for (const [cmd, n] of Object.entries(p.calls)) calls[cmd] = (calls[cmd] ?? 0) + n;
    for (const [cmd, n] of Object.entries(p.usec)) usec[cmd] = (usec[cmd] ?? 0) + n;
  }
  const sum = (f: (p: RedisSnapshot) => number): number => parts.reduce((a, p) => a + f(p), 0);
  return {
    calls,
    usec,
    totalCommands: sum((p) => p.totalCommands),
    cpuSeconds: sum((p) => p.cpuSeconds),
    netInBytes: sum((p) => p.netInBytes),
    netOutBytes: sum((p) => p.netOutBytes),
  };
}

async function nodeSnapshot(redis: Redis): Promise<RedisSnapshot> {
  const [commandstats, stats, cpu] = await Promise.all([
    redis.info('commandstats'),
    redis.info('stats'),
    redis.info('cpu'),
  ]);
  const calls: Record<string, number> = {};
  const usec: Record<string, number> = {};
  for (const line of commandstats.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) {
      calls[m[1] as string] = Number(m[2]);
      usec[m[1] as string] = Number(m[3]);
    }
  }
  const field = (text: string, name: string): number =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    calls,
    usec,
    totalCommands: field(stats, 'total_commands_processed'),
    cpuSeconds: field(cpu, 'used_cpu_user') + field(cpu, 'used_cpu_sys'),
    netInBytes: field(stats, 'total_net_input_bytes'),
    netOutBytes: field(stats, 'total_net_output_bytes'),
  };
}

export interface RedisDelta {
  /** Commands executed by the server (client-issued + issued inside Lua), per unit. */
  readonly commandsPerUnit: number;
  /** total_commands_processed per unit (Redis 7 counts Lua-internal calls here too). */
  readonly totalCommandsProcessedPerUnit: number;
  /** Server CPU time per unit, microseconds. */
  readonly redisCpuUsecPerUnit: number;
  /** Server CPU busy fraction during the phase (1 = one core saturated). */
  readonly redisCpuUtilization: number;
  /** Bytes clients sent to / received from Redis, per unit (includes the bench's own INFO/poll traffic, which is tiny). */
  readonly bytesToRedisPerUnit: number;
  readonly bytesFromRedisPerUnit: number;
  /** Top commands by calls: per unit, with the server time they took. */
  readonly topCommandsPerUnit: Record<string, { calls: number; usec: number }>;
}

/**
 * Difference of two snapshots, normalised per `units` (e.g. per step or per job). `exclude`
 * removes calls the bench itself made (e.g. its own completion polling), by command name.
 */
export function redisDelta(
  before: RedisSnapshot,
  after: RedisSnapshot,
  units: number,
  elapsedMs: number,
  exclude: Record<string, number> = {},
  top = 15,
): RedisDelta {
  const rows: [string, number, number][] = [];
  let total = 0;
  for (const [cmd, calls] of Object.entries(after.calls)) {
    const d = calls - (before.calls[cmd] ?? 0) - (exclude[cmd] ?? 0);
    if (d <= 0) continue;
    const us = (after.usec[cmd] ?? 0) - (before.usec[cmd] ?? 0);
    // INFO itself is the bench's accounting, not the system under test.
    if (cmd === 'info') continue;
    rows.push([cmd, d, us]);
    total += d;
  }
  rows.sort((a, b) => b[1] - a[1]);
  const topCommandsPerUnit: Record<string, { calls: number; usec: number }> = {};
  for (const [cmd, calls, us] of rows.slice(0, top))
    topCommandsPerUnit[cmd] = { calls: round(calls / units), usec: round(us / units, 1) };
  const cpu = after.cpuSeconds - before.cpuSeconds;
  const infoCalls = (after.calls['info'] ?? 0) - (before.calls['info'] ?? 0);
  return {
    commandsPerUnit: round(total / units),
    totalCommandsProcessedPerUnit: round(
      (after.totalCommands - before.totalCommands - infoCalls - sumValues(exclude)) / units,
    ),
    redisCpuUsecPerUnit: round((cpu * 1e6) / units, 1),
    redisCpuUtilization: round(cpu / (elapsedMs / 1000)),
    bytesToRedisPerUnit: Math.round((after.netInBytes - before.netInBytes) / units),
    bytesFromRedisPerUnit: Math.round((after.netOutBytes - before.netOutBytes) / units),
    topCommandsPerUnit,
  };
}

function sumValues(record: Record<string, number>): number {
  return Object.values(record).reduce((a, b) => a + b, 0);
}

/**
 * A plain client for the bench's own bookkeeping (never used by the system under test). One
 * node: the scenarios that read a node's keyspace or memory (SCAN, MEMORY) take one Redis.
 */
export function benchClient(url: string, name = 'bench'): Redis {
  if (isClusterUrl(url))
    throw new BenchError(
      `${name}: this scenario reads one Redis node and does not run on a cluster (${url.split(',')[0]}…); the "cluster" scenario measures clusters`,
    );
  return benchAnyClient(url, name) as Redis;
}

/** Like benchClient, and an ioredis Cluster for a `redis+cluster://` URL. */
function benchAnyClient(url: string, name = 'bench'): AnyRedis {
  const client = testRedis(url, { maxRetriesPerRequest: null, connectionName: name });
  client.on('error', (err: Error) => progress(`bench redis client error: ${err.message}`));
  return client;
}

/** CPU seconds (user+sys) of another process, from /proc (Linux); undefined elsewhere. */
export async function processCpuSeconds(pid: number): Promise<number | undefined> {
  try {
    const { readFile } = await import('node:fs/promises');
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the ")" of the command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / 100; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// MONITOR over a raw socket (ioredis' monitor mode races with a busy server: "Command queue
// state error"), so the bench parses the feed itself.
// ---------------------------------------------------------------------------------------------

export interface MonitorLine {
  /** 'lua' for commands issued inside scripts, else the client's "ip:port". */
  readonly source: string;
  readonly args: string[];
}

export interface MonitorFeed {
  stop(): Promise<void>;
}

/** Unescapes one quoted argument of a MONITOR line (Redis' sdscatrepr format). */
function unrepr(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, e: string) => {
    if (e.length === 3) return String.fromCharCode(parseInt(e.slice(1), 16));
    return ({ n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' } as Record<string, string>)[e] ?? e;
  });
}

function parseMonitorLine(line: string): MonitorLine | undefined {
  const m = /^\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/s.exec(line);
  if (!m) return undefined;
  const args: string[] = [];
  for (const a of (m[2] as string).matchAll(/"((?:[^"\\]|\\.)*)"/gs))
    args.push(unrepr(a[1] as string));
  return { source: m[1] as string, args };
}

export async function startMonitor(
  url: string,
  onLine: (line: MonitorLine) => void,
): Promise<MonitorFeed> {
  const { connect } = await import('node:net');
  const u = new URL(url);
  const socket = connect({ host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) });
  socket.setEncoding('latin1');
  let buffered = '';
  let ready: (() => void) | undefined;
  let failed: ((err: Error) => void) | undefined;
  const started = new Promise<void>((resolve, reject) => {
    ready = resolve;
    failed = reject;
  });
  socket.on('error', (err) => failed?.(err));
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\r\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 2);
      if (line === '+OK') {
        ready?.();
        continue;
      }
      if (line.startsWith('-')) {
        failed?.(new BenchError(`MONITOR failed: ${line.slice(1)}`));
        continue;
      }
      const parsed = parseMonitorLine(Buffer.from(line.slice(1), 'latin1').toString('utf8'));
      if (parsed) onLine(parsed);
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const user = decodeURIComponent(u.username);
  const pass = decodeURIComponent(u.password);
  if (pass !== '') socket.write(user !== '' ? `AUTH ${user} ${pass}\r\n` : `AUTH ${pass}\r\n`);
  socket.write('MONITOR\r\n');
  await withTimeout(started, 5_000, 'MONITOR to start');
  return {
    stop: async () => {
      await new Promise<void>((resolve) => {
        socket.once('close', () => resolve());
        socket.end();
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 1_000).unref();
      });
    },
  };
}

/**
 * A measured value against its budget (issue 11): `max` budgets are upper bounds, `min` lower;
 * anything but a number (the scenario did not run) is `measured: null`.
 */
export function budgetCheck(measured: unknown, limit: number, kind: 'max' | 'min' = 'max') {
  if (typeof measured !== 'number') return { measured: null, [kind]: limit, met: null };
  return { measured, [kind]: limit, met: kind === 'max' ? measured <= limit : measured >= limit };
}
