/**
 * Test fixture: a real worker PROCESS (`node apps/worker/src/main.ts`), for crash and scale tests
 * where "the worker died" must mean a dead process, not a closed object.
 *
 *   const w = await spawnWorker({ redisUrl, prefix, agents: 'demo', pause: { 'before-infer': 60_000 } });
 *   const p = await w.onProbe('before-infer');     // first PROBE line for that point
 *   w.kill('SIGKILL'); await w.exited;
 *
 * Every spawned process is remembered; `stopAllWorkerProcesses()` (call it in afterAll) kills what
 * is still alive, and a process 'exit' hook SIGKILLs leftovers even if a test run aborts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BatonRuntime } from '@baton/runtime';
import { BENCH_AGENTS_MODULE } from './bench-agents.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** A `PROBE {json}` line, annotated with the process that printed it. */
export interface ProbeEvent {
  readonly point: string;
  readonly pid: number;
  readonly workerId: string;
  /** Milliseconds since the epoch when the test process read the line. */
  readonly seenAt: number;
  readonly [key: string]: unknown;
}

export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: number;
}

export interface SpawnWorkerOptions {
  readonly redisUrl: string;
  readonly prefix: string;
  /**
   * BATON_AGENTS (comma separated agent sets and modules: demo, matrix, children, a path). Default
   * 'demo'. `bench` names the bench agents module (./bench-agents.ts): the worker has no such set.
   */
  readonly agents?: string;
  /** BATON_PROBES=1: print PROBE lines (default true; the probes are how tests observe the worker). */
  readonly probes?: boolean;
  /** BATON_PROBE_PAUSE: point → pause in ms each time the point is reached. */
  readonly pause?: Readonly<Record<string, number>>;
  /** Extra environment (e.g. SHUTDOWN_GRACE_MS, WORKER_CONCURRENCY). */
  readonly env?: Readonly<Record<string, string>>;
  /** LOG_LEVEL of the worker (default 'warn'; its output is kept for failure messages). */
  readonly logLevel?: string;
  /** How long to wait for READY (default 20 s). */
  readonly readyTimeoutMs?: number;
  /** The checkout to run (default this one): the upgrade test runs an earlier release's tree. */
  readonly root?: string;
}

export interface WorkerProcess {
  readonly pid: number;
  /** The worker id printed on the READY line. */
  readonly id: string;
  readonly child: ChildProcess;
  /** Every probe seen so far, in order. */
  readonly probes: readonly ProbeEvent[];
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<WorkerExit>;
  /** The first probe (already seen or future) at `point` that satisfies `match`. */
  onProbe(
    point: string,
    match?: (p: ProbeEvent) => boolean,
    timeoutMs?: number,
  ): Promise<ProbeEvent>;
  /** Sends a signal (no-op when already exited). */
  kill(signal?: NodeJS.Signals): void;
  /** Waits for exit; rejects after `timeoutMs`. */
  waitForExit(timeoutMs?: number): Promise<WorkerExit>;
  isAlive(): boolean;
  /** The last lines the process wrote (stdout and stderr), for failure messages. */
  output(): string;
}

const live = new Set<WorkerProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const w of live) if (w.isAlive()) w.child.kill('SIGKILL');
  });
}

/** Test-sized timings (like testConfig): crash recovery takes seconds. */
const PROCESS_TIMINGS: Readonly<Record<string, string>> = {
  LEASE_TTL_MS: '2000',
  JOB_LOCK_MS: '2000',
  STALLED_INTERVAL_MS: '1000',
  RECONCILE_INTERVAL_MS: '1000',
  SHUTDOWN_GRACE_MS: '2000',
  WORKER_CONCURRENCY: '16',
  TOOL_CONCURRENCY: '16',
};

export async function spawnWorker(opts: SpawnWorkerOptions): Promise<WorkerProcess> {
  installExitHook();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  // Never inherit worker settings from the test environment by accident.
  delete env['WORKER_ID'];
  delete env['BATON_PROBE_PAUSE'];
  Object.assign(env, PROCESS_TIMINGS, {
    REDIS_URL: opts.redisUrl,
    BATON_PREFIX: opts.prefix,
    BATON_AGENTS: (opts.agents ?? 'demo')
      .split(',')
      .map((entry) => (entry.trim() === 'bench' ? BENCH_AGENTS_MODULE : entry))
      .join(','),
    LOG_LEVEL: opts.logLevel ?? 'warn',
    BATON_PROBES: opts.probes === false ? '0' : '1',
  });
  if (opts.pause && Object.keys(opts.pause).length > 0)
    env['BATON_PROBE_PAUSE'] = Object.entries(opts.pause)
      .map(([point, ms]) => `${point}:${ms}`)
      .join(',');
  Object.assign(env, opts.env ?? {});

  const child = spawn(process.execPath, ['apps/worker/src/main.ts'], {
    cwd: opts.root ?? REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid ?? -1;
  const tail: string[] = [];
  const remember = (line: string): void => {
    tail.push(line);
    if (tail.length > 200) tail.shift();
  };
  const probes: ProbeEvent[] = [];
  const waiters = new Set<{
    point: string;
    match: (p: ProbeEvent) => boolean;
    resolve: (p: ProbeEvent) => void;
  }>();
  let workerId = '';
  let onReady: ((id: string) => void) | undefined;
  const ready = new Promise<string>((res) => (onReady = res));

  let exitInfo: WorkerExit | undefined;
  const exited = new Promise<WorkerExit>((res) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal, at: Date.now() };
      res(exitInfo);
    });
  });

  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line.startsWith('READY ')) {
      workerId = line.slice('READY '.length).trim();
      onReady?.(workerId);
      return;
    }
    if (line.startsWith('PROBE ')) {
      let payload: Record<string, unknown>;
      try {
        payload = JSON.parse(line.slice('PROBE '.length)) as Record<string, unknown>;
      } catch {
        remember(line);
        return;
      }
      const probe = {
        ...payload,
        point: String(payload['point']),
        pid,
        workerId,
        seenAt: Date.now(),
      } as ProbeEvent;
      probes.push(probe);
      for (const w of [...waiters])
        if (w.point === probe.point && w.match(probe)) {
          waiters.delete(w);
          w.resolve(probe);
        }
      return;
    }
    remember(line);
  });
  createInterface({ input: child.stderr }).on('line', (line) => remember(`[stderr] ${line}`));

  const isAlive = (): boolean => exitInfo === undefined;
  const output = (): string => tail.join('\n');

  const handle: WorkerProcess = {
    pid,
    get id() {
      return workerId;
    },
    child,
    probes,
    exited,
    isAlive,
    output,
    onProbe(point, match = () => true, timeoutMs = 20_000) {
      const seen = probes.find((p) => p.point === point && match(p));
      if (seen) return Promise.resolve(seen);
      return new Promise<ProbeEvent>((res, rej) => {
        const waiter = {
          point,
          match,
          resolve: (p: ProbeEvent) => {
            clearTimeout(timer);
            res(p);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          rej(
            new Error(
              `worker ${pid}: no probe "${point}" within ${timeoutMs} ms (alive: ${isAlive()})\n${output()}`,
            ),
          );
        }, timeoutMs);
        timer.unref();
        waiters.add(waiter);
        // A dead process prints no more probes: fail at once instead of at the timeout.
        void exited.then((e) => {
          if (!waiters.delete(waiter)) return;
          clearTimeout(timer);
          rej(
            new Error(
              `worker ${pid} exited (code ${e.code}, signal ${e.signal}) before probe "${point}"\n${output()}`,
            ),
          );
        });
      });
    },
    kill(signal = 'SIGTERM') {
      if (isAlive()) child.kill(signal);
    },
    async waitForExit(timeoutMs = 15_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, rej) => {
        timer = setTimeout(
          () => rej(new Error(`worker ${pid} did not exit within ${timeoutMs} ms\n${output()}`)),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
  live.add(handle);
  void exited.then(() => live.delete(handle));

  // A bound on waiting for an event, not a pace: a worker starts in ~1 s on a quiet 2-core
  // machine and has taken 20 s at a load of 25 with test files running beside it.
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  let readyTimer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      exited.then((e) => {
        throw new Error(
          `worker exited before READY (code ${e.code}, signal ${e.signal})\n${output()}`,
        );
      }),
      new Promise<never>((_, rej) => {
        readyTimer = setTimeout(
          () => rej(new Error(`worker ${pid} not READY within ${timeoutMs} ms\n${output()}`)),
          timeoutMs,
        );
      }),
    ]);
  } catch (error) {
    handle.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(readyTimer);
  }
  return handle;
}

/** Kills every worker process this test file started and waits for them to exit. */
export async function stopAllWorkerProcesses(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  const all = [...live];
  for (const w of all) w.kill(signal);
  await Promise.all(all.map((w) => w.waitForExit(10_000).catch(() => w.child.kill('SIGKILL'))));
}

/** What checkRunInvariants found, for further assertions. */
export interface RunAudit {
  readonly events: readonly { seq: number; type: string; [k: string]: unknown }[];
  readonly problems: string[];
  readonly assistantSteps: number[];
  readonly resultsPerCall: Record<string, number>;
}

/**
 * The invariants every finished run must satisfy, whatever crashed on the way: gapless unique
 * event seqs 1..N, one run.finished with status done (last), one message.assistant per step, unique message ids
 * (checkpoint and thread), one tool_call.result per call attempt (`attemptsPerCall` overrides
 * the default of 1 for calls that legitimately ran more than once).
 */
export async function auditRun(
  client: Pick<BatonRuntime, 'store' | 'threads'>,
  runId: string,
  attemptsPerCall: Readonly<Record<string, number>> = {},
): Promise<RunAudit> {
  const problems: string[] = [];
  const stored = await client.store.load(runId);
  if (!stored)
    return {
      events: [],
      problems: [`run ${runId} missing`],
      assistantSteps: [],
      resultsPerCall: {},
    };
  const cp = stored.checkpoint;
  const events = (await client.store.readEvents(runId)) as unknown as RunAudit['events'];
  const seqs = events.map((e) => e.seq);
  if (seqs.some((s, i) => s !== i + 1)) problems.push(`event seqs not 1..N: ${seqs.join(',')}`);
  // A suspension emits run.finished with status 'waiting'; the end of the run is the one 'done'.
  const finished = events.filter((e) => e.type === 'run.finished' && e['status'] === 'done');
  if (finished.length !== 1) problems.push(`${finished.length} run.finished (done) events`);
  else if (events.at(-1)?.type !== 'run.finished')
    problems.push('run.finished is not the last event');
  const assistantSteps = events
    .filter((e) => e.type === 'message.assistant')
    .map((e) => e['step'] as number);
  if (new Set(assistantSteps).size !== assistantSteps.length)
    problems.push(`duplicate message.assistant steps: ${assistantSteps.join(',')}`);
  const stepsStarted = events
    .filter((e) => e.type === 'step.started')
    .map((e) => e['step'] as number);
  if (new Set(stepsStarted).size !== stepsStarted.length)
    problems.push(`duplicate step.started: ${stepsStarted.join(',')}`);
  if (cp.termination?.kind === 'natural_end' && assistantSteps.length !== stepsStarted.length)
    problems.push(`${assistantSteps.length} message.assistant for ${stepsStarted.length} steps`);
  const stepsFinished = events
    .filter((e) => e.type === 'step.finished')
    .map((e) => e['step'] as number);
  if (new Set(stepsFinished).size !== stepsFinished.length)
    problems.push(`duplicate step.finished: ${stepsFinished.join(',')}`);
  const resultsPerCall: Record<string, number> = {};
  for (const e of events)
    if (e.type === 'tool_call.result')
      resultsPerCall[e['toolCallId'] as string] =
        (resultsPerCall[e['toolCallId'] as string] ?? 0) + 1;
  for (const [callId, n] of Object.entries(resultsPerCall))
    if (n !== (attemptsPerCall[callId] ?? 1))
      problems.push(`call ${callId}: ${n} tool_call.result events`);
  const ids = cp.messages.map((m) => m.id);
  if (new Set(ids).size !== ids.length)
    problems.push(`duplicate message ids in checkpoint: ${ids.join(',')}`);
  const toolMsgs = cp.messages
    .filter((m) => m.role === 'tool')
    .map((m) => (m.role === 'tool' ? m.toolCallId : ''));
  if (new Set(toolMsgs).size !== toolMsgs.length)
    problems.push(`duplicate tool messages: ${toolMsgs.join(',')}`);
  const thread = await client.threads.load(cp.identity.tenantId, cp.identity.threadId);
  const threadIds = thread.messages.map((m) => m.id);
  if (new Set(threadIds).size !== threadIds.length)
    problems.push(`duplicate message ids in thread history: ${threadIds.join(',')}`);
  return { events, problems, assistantSteps, resultsPerCall };
}
