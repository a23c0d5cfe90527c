/**
 * The job model's floor, measured: a replica of a `bench` agent run's jobs with no Baton code in
 * it (but for coalesceWrites, the per-turn write batching Baton's connections also have). Same BullMQ operations per run as Baton (one step job, activated three times: it adds two
 * tool children in each of the first two rounds and waits in waiting-children until BullMQ
 * re-enters it; four tool jobs), same queue and job options, and only the durable Redis writes a
 * correct design cannot skip, each one round trip:
 *
 * - run create: checkpoint, input message, first event (HSET, RPUSH, HINCRBY, XADD, SPUBLISH);
 * - per activation, lease acquire + load (SET NX PX, HMGET, LRANGE, + HMGET of the awaited
 *   results when a round's tools ran);
 * - per durable transition a fenced commit (GET lease, [RPUSH messages], HSET, HINCRBY, XADD,
 *   SPUBLISH): before the model call (the step's start, and the round's results applied) and
 *   after it (the answer with its tool calls marked running, before their jobs exist; or the
 *   final answer, which also drops the lease);
 * - lease release before waiting for the children;
 * - per tool job, the checkpoint read (HMGET) and the result record (HSETNX, first writer wins).
 *
 * Payload sizes are those Baton writes for this agent (MONITOR of one run: checkpoint 0.7–1.2 KB,
 * events 0.2–1.5 KB per commit, messages 80–200 B); the checkpoint is JSON the worker decodes on
 * every load and encodes on every commit, as Baton's does. Left out, as the README's floor list
 * does: the per-job holder note (stall accounting; BENCH_FLOOR_HOLDER_NOTE=1 adds it), thread
 * acquire / history / release, run indexes, fairness admission, the delta append.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  Queue,
  WaitingChildrenError,
  Worker,
  type ConnectionOptions,
  type Job,
  type JobsOptions,
} from 'bullmq';
import { Redis } from 'ioredis';
import { coalesceBullWrites, coalesceWrites, jobHashKeyOf } from '@baton/runtime/internal';
import {
  BenchError,
  benchClient,
  mapLimit,
  pollUntil,
  redisDelta,
  redisSnapshot,
  round,
  type BenchContext,
} from './lib.ts';
import {
  bullmqAddrs,
  classifyClients,
  localAddr,
  monitorCounts,
  perUnit,
} from './monitor-counts.ts';
import {
  ACQUIRE,
  checkpoint,
  COMMIT,
  CREATE,
  events,
  HOLDER_NOTE,
  RELEASE,
  SIZES,
  sized,
  type Call,
  type Checkpoint,
  type FloorRedis,
  type StepData,
  type ToolData,
} from './job-model-floor-writes.ts';

const STEPS_PER_RUN = 3;
const TOOLS_PER_ROUND = 2;
const PRIORITY = 3;
const RETENTION = { age: 3600, count: 50_000 };
const LEASE_TTL_MS = 15_000;

export interface FloorKnobs {
  readonly runs: number;
  readonly warmupRuns: number;
  readonly concurrency: number;
  readonly createParallelism: number;
  readonly profileRuns: number;
  readonly timeoutMs: number;
  /**
   * BENCH_FLOOR_HOLDER_NOTE=1: also note each job attempt's worker on the job's hash, as Baton's
   * stall accounting does (one round trip per activation; not part of the floor by default).
   */
  readonly holderNote: boolean;
}

export interface FloorHarness {
  readonly label: string;
  sample(r: number): Promise<Record<string, unknown>>;
  /** Round trips and commands per step under MONITOR (untimed), the floor's own and BullMQ's. */
  profile(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function floorHarness(
  ctx: BenchContext,
  url: string,
  k: FloorKnobs,
): Promise<FloorHarness> {
  const base = `bench-floor-${randomBytes(3).toString('hex')}`;
  const connection: ConnectionOptions = { url, maxRetriesPerRequest: null };
  const prefix = `${base}-bull`;
  const queueName = 'floor.s00-01{q1-0-0}';
  const queue = new Queue(queueName, { connection, prefix, streams: { events: { maxLen: 100 } } });
  coalesceBullWrites(queue);
  const redis = new Redis(url, { maxRetriesPerRequest: null, connectionName: 'floor' });
  coalesceWrites(redis);
  const r = redis as FloorRedis;
  r.defineCommand('floorCreate', { numberOfKeys: 4, lua: CREATE });
  r.defineCommand('floorAcquire', { numberOfKeys: 4, lua: ACQUIRE });
  r.defineCommand('floorCommit', { numberOfKeys: 5, lua: COMMIT });
  r.defineCommand('floorRelease', { numberOfKeys: 1, lua: RELEASE });
  r.defineCommand('floorNote', { numberOfKeys: 1, lua: HOLDER_NOTE });
  const holder = `floor-${randomBytes(4).toString('hex')}`;
  const note = async (job: Job): Promise<void> => {
    if (k.holderNote) await r.floorNote(jobHashKeyOf(job), holder, job.stalledCounter);
  };
  const keys = (runId: string): Record<string, string> => {
    const at = `${base}:{run:${runId}}`;
    return {
      cp: `${at}:cp`,
      lease: `${at}:lease`,
      messages: `${at}:messages`,
      results: `${at}:results`,
      events: `${at}:events`,
      channel: `${at}:ch`,
    };
  };

  const commit = async (
    runId: string,
    token: string,
    version: number,
    data: string,
    awaiting: string,
    evs: string,
    eventCount: number,
    release: boolean,
    messages: readonly string[],
  ): Promise<void> => {
    const k_ = keys(runId);
    const seq = await r.floorCommit(
      k_['cp'] ?? '',
      k_['lease'] ?? '',
      k_['messages'] ?? '',
      k_['events'] ?? '',
      k_['channel'] ?? '',
      token,
      version,
      data,
      awaiting,
      evs,
      eventCount,
      release ? '1' : '0',
      ...messages,
    );
    if (seq === null) throw new BenchError(`floor: commit of ${runId} lost its lease`);
  };

  const stepJobOpts = (jobId: string, dedupId: string): JobsOptions => ({
    jobId,
    priority: PRIORITY,
    attempts: 8,
    backoff: { type: 'exponential', delay: 100 },
    removeOnComplete: RETENTION,
    removeOnFail: RETENTION,
    deduplication: { id: dedupId },
  });

  /** One activation of a run's step job: a round of the scripted model. */
  const step = async (job: Job<StepData>, token: string | undefined): Promise<string> => {
    const { runId, tenantId, agent } = job.data;
    const k_ = keys(runId);
    await note(job);
    const lease = randomUUID();
    const loaded = await r.floorAcquire(
      k_['lease'] ?? '',
      k_['cp'] ?? '',
      k_['messages'] ?? '',
      k_['results'] ?? '',
      lease,
      LEASE_TTL_MS,
    );
    if (loaded === null) throw new BenchError(`floor: the lease of ${runId} was held`);
    const [data, versionText, history, results] = loaded;
    const cp = JSON.parse(data) as Checkpoint;
    // The model's request is built from the whole conversation, as Baton's is.
    const conversation = history.map((m) => JSON.parse(m) as Record<string, unknown>);
    const applied = results.map((x) => JSON.parse(x) as { toolCallId: string });
    if (applied.length !== Object.values(cp.calls).filter((c) => c.status === 'running').length)
      throw new BenchError(`floor: ${runId} re-entered before its tools recorded their results`);
    let version = Number(versionText);
    const n = cp.step + 1;
    const calls: Record<string, Call> = {};
    for (const id of Object.keys(cp.calls)) calls[id] = { id, status: 'done' };
    // Durable before the model call: the round's results applied and the step begun.
    version += 1;
    const started = { ...cp, step: n, status: 'running' as const, calls };
    await commit(
      runId,
      lease,
      version,
      checkpoint(started, applied.length > 0 ? SIZES.checkpoint.applied : SIZES.checkpoint.start),
      '',
      events(
        runId,
        applied.length > 0
          ? ['tool.result', 'tool.result', 'step.finished', 'step.started']
          : ['run.started', 'step.started'],
        applied.length > 0 ? SIZES.events.applied : SIZES.events.start,
      ),
      applied.length > 0 ? 4 : 2,
      false,
      applied.map((x) => sized({ role: 'tool', toolCallId: x.toolCallId }, SIZES.message.result)),
    );
    // The scripted model: two tool calls in each round but the last.
    const request = JSON.stringify(conversation);
    if (request.length === 0) throw new BenchError('floor: empty request');
    version += 1;
    if (n === STEPS_PER_RUN) {
      const done = { ...started, status: 'done' as const };
      await commit(
        runId,
        lease,
        version,
        checkpoint(done, SIZES.checkpoint.final),
        '',
        events(runId, ['message', 'step.finished', 'run.finished'], SIZES.events.final),
        3,
        true,
        [sized({ role: 'assistant', step: n }, SIZES.message.final)],
      );
      return 'done';
    }
    const ids = Array.from({ length: TOOLS_PER_ROUND }, (_, i) => `call_${n}_${i + 1}`);
    const running = { ...started, calls: { ...calls } };
    for (const id of ids) running.calls[id] = { id, status: 'running' };
    // Durable before the tool jobs exist: the answer and its calls marked running.
    await commit(
      runId,
      lease,
      version,
      checkpoint(running, SIZES.checkpoint.called),
      ids.map((id) => `${id}#0`).join(' '),
      events(runId, ['message', 'tool.call', 'tool.call', 'tool.started'], SIZES.events.called),
      4,
      false,
      [sized({ role: 'assistant', step: n, toolCalls: ids }, SIZES.message.called)],
    );
    for (const toolCallId of ids) {
      const child: ToolData = {
        v: 1,
        kind: 'tool',
        runId,
        tenantId,
        agent,
        step: n,
        toolCallId,
        attempt: 0,
      };
      await queue.add(`tool:${toolCallId}`, child, {
        jobId: `tool.${runId}.${toolCallId}.0`,
        priority: PRIORITY,
        parent: { id: job.id ?? '', queue: job.queueQualifiedName },
        attempts: 3,
        backoff: { type: 'exponential', delay: 200 },
        ignoreDependencyOnFailure: true,
        removeOnComplete: RETENTION,
        removeOnFail: RETENTION,
      });
    }
    await r.floorRelease(k_['lease'] ?? '', lease);
    if (token === undefined) throw new BenchError('floor: step job without a token');
    if (await job.moveToWaitingChildren(token)) throw new WaitingChildrenError();
    // Every child finished before the job could wait: it goes on by itself.
    return step(job, token);
  };

  /** A tool job: read the call from the checkpoint, run the no-op tool, record its result. */
  const tool = async (job: Job<ToolData>): Promise<string> => {
    await note(job);
    const { runId, toolCallId, attempt } = job.data;
    const k_ = keys(runId);
    const [data] = await redis.hmget(k_['cp'] ?? '', 'data', 'version');
    const cp = JSON.parse(data ?? '{}') as Checkpoint;
    if (cp.calls[toolCallId]?.status !== 'running') return 'stale';
    const result = sized(
      { toolCallId, attempt, result: { kind: 'ok', value: null } },
      SIZES.toolResult,
    );
    await redis.hsetnx(k_['results'] ?? '', `${toolCallId}#${attempt}`, result);
    return 'recorded';
  };

  let finished = 0;
  let failed: string | undefined;
  const worker = new Worker(
    queueName,
    async (job: Job, token?: string) =>
      (job.data as { kind: string }).kind === 'tool'
        ? tool(job as Job<ToolData>)
        : step(job as Job<StepData>, token),
    {
      connection,
      prefix,
      // Baton's Worker on a shard queue: steps + tools, its lock and stall settings.
      concurrency: 2 * k.concurrency,
      lockDuration: 15_000,
      stalledInterval: 10_000,
      maxStalledCount: 50,
    },
  );
  coalesceBullWrites(worker);
  worker.on('completed', (job) => {
    if ((job.data as { kind: string }).kind === 'step') finished += 1;
  });
  worker.on('failed', (job, err) => {
    failed = `floor job ${job?.id} failed: ${err.message}`;
  });
  worker.on('error', (err) => ctx.log(`floor worker error: ${err.message}`));
  const bench = benchClient(url, 'bench-floor');

  const create = async (runId: string): Promise<void> => {
    const k_ = keys(runId);
    const cp: Omit<Checkpoint, 'state'> = { runId, step: 0, status: 'queued', calls: {} };
    await r.floorCreate(
      k_['cp'] ?? '',
      k_['messages'] ?? '',
      k_['events'] ?? '',
      k_['channel'] ?? '',
      checkpoint(cp, SIZES.checkpoint.create),
      sized({ role: 'user', content: 'bench' }, SIZES.message.input),
      events(runId, ['run.created'], SIZES.events.create),
    );
    const data: StepData = {
      v: 1,
      kind: 'step',
      runId,
      tenantId: 'bench',
      agent: 'bench',
      reason: 'start',
      expectedVersion: 1,
    };
    const dedupId = `step.${runId}.v1`;
    await queue.add('start', data, stepJobOpts(`${dedupId}.${randomUUID().slice(0, 8)}`, dedupId));
  };

  const batch = async (n: number): Promise<number> => {
    const target = finished + n;
    const started = performance.now();
    await mapLimit(
      Array.from({ length: n }, () => randomUUID()),
      k.createParallelism,
      create,
    );
    await pollUntil(
      async () => {
        if (failed) throw new BenchError(failed);
        return Promise.resolve(finished >= target);
      },
      k.timeoutMs,
      () => `floor: ${finished}/${target} runs finished`,
      2,
    );
    return performance.now() - started;
  };

  const close = async (): Promise<void> => {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    redis.disconnect();
    bench.disconnect();
  };
  try {
    await worker.waitUntilReady();
    await redis.ping();
    if (k.warmupRuns > 0) await batch(k.warmupRuns);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    label: 'job-model floor',
    sample: async (n) => {
      const before = await redisSnapshot(bench);
      const cpu0 = process.cpuUsage();
      const elapsedMs = await batch(k.runs);
      const cpu = process.cpuUsage(cpu0);
      const after = await redisSnapshot(bench);
      const steps = k.runs * STEPS_PER_RUN;
      const stepsPerSec = (steps / elapsedMs) * 1000;
      ctx.log(`floor: sample ${n + 1}: ${round(stepsPerSec, 0)} steps/s`);
      return {
        runs: k.runs,
        steps,
        elapsedMs: round(elapsedMs, 1),
        stepsPerSec: round(stepsPerSec, 1),
        nodeCpuUsecPerStep: round((cpu.user + cpu.system) / steps, 1),
        redisPerStep: redisDelta(before, after, steps, elapsedMs),
      };
    },
    profile: async () => {
      const ownAddr = localAddr(redis);
      const bull = await bullmqAddrs(queue, worker);
      const clients = await classifyClients(bench, (addr, name) =>
        addr === ownAddr ? 'own' : bull.has(addr) || name.startsWith(prefix) ? 'other' : null,
      );
      ctx.log(`floor: profile, ${k.profileRuns} runs under MONITOR (not timed)`);
      const counts = await monitorCounts(url, clients, async () => {
        await batch(k.profileRuns);
      });
      const steps = k.profileRuns * STEPS_PER_RUN;
      return perUnit(counts, steps);
    },
    close,
  };
}
