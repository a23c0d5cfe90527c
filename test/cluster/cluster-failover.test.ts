/**
 * Issue 22, "a failover fails user runs": with 100 runs in flight on a real Redis Cluster
 * (3 masters + 3 replicas, node timeout 3 s), the master that holds the most queue jobs is
 * killed with SIGKILL and its replica promoted. Every run must still end exactly once, done and
 * not in error, with its events gapless and each tool call executed and recorded once; an HTTP
 * client polling the API all along must see only 2xx, 4xx or 503, never a 500 and never a hang.
 *
 * The shipped worker and API run as processes configured by REDIS_URL alone (the cluster URL),
 * with production lock and lease timings. FAILOVER_REPEATS=5 repeats the kill on the same cluster
 * (the killed node comes back as a replica in between); CI runs one. BATON_QUEUE_SHARDS, when
 * set, reaches the worker and the API through the environment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import { spawnApi, stopAllApiProcesses, type ApiProcess } from '@baton/testing/api-process';
import {
  busiestQueueMaster,
  clusterOkAgain,
  queueKeysByMaster,
  toolExecutions,
} from '@baton/testing/cluster-failover';
import { FAILOVER_AGENTS_MODULE } from '@baton/testing/failover-agents';
import { startRedisCluster, type RedisCluster } from '@baton/testing/redis-cluster';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import {
  auditRun,
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';

const REPEATS = Number(process.env['FAILOVER_REPEATS'] ?? '1');
/** FAILOVER_STRICT_TIMING=1: also assert that every 503 came within 0.5 s. */
const STRICT_TIMING = process.env['FAILOVER_STRICT_TIMING'] === '1';
const RUNS = 100;
const KEY = 'failover-tenant-secret-key';
/** Long enough for node timeout + promotion + the runs' own ~6 s, with a loaded 2-core machine. */
const SETTLE_MS = 120_000;

interface HttpLog {
  readonly byStatus: Record<string, number>;
  readonly bad: string[];
  maxMs: number;
  /** The slowest answer: its path and status. */
  slowest?: string;
  /** The slowest answer that was neither 2xx nor 4xx (a 503 unavailable). */
  maxUnavailableMs: number;
}

/** Polls the API (one run, the run list) until `stop` is set; records every answer. */
async function pollApi(
  base: string,
  runIds: readonly string[],
  log: HttpLog,
  stop: { done: boolean },
): Promise<void> {
  let i = 0;
  while (!stop.done) {
    i += 1;
    const path =
      i % 3 === 0 ? '/v1/runs?limit=20' : `/v1/runs/${runIds[i % Math.max(1, runIds.length)]}`;
    const t0 = Date.now();
    let status: string;
    try {
      const res = await fetch(`${base}${path}`, {
        headers: { authorization: `Bearer ${KEY}` },
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer();
      status = String(res.status);
      const ok = (res.status >= 200 && res.status < 500) || res.status === 503;
      if (!ok) log.bad.push(`${path}: ${res.status}`);
    } catch (err) {
      status = (err as Error).name;
      log.bad.push(`${path}: ${(err as Error).message}`);
    }
    log.byStatus[status] = (log.byStatus[status] ?? 0) + 1;
    const ms = Date.now() - t0;
    if (!/^[24]\d\d$/.test(status)) log.maxUnavailableMs = Math.max(log.maxUnavailableMs, ms);
    if (ms > log.maxMs) {
      log.maxMs = ms;
      log.slowest = `${path} ${status}`;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function createRun(base: string, n: number): Promise<string> {
  // During a failover the API may answer 503 (Retry-After): the client retries, as a client would.
  for (let attempt = 0; ; attempt += 1) {
    const res = await fetch(`${base}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        agent: 'failover',
        input: { messages: [{ role: 'user', content: `failover run ${n}` }] },
      }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { runId?: string };
    if (res.status === 202 && body.runId) return body.runId;
    if (res.status !== 503 || attempt > 50)
      throw new Error(`POST /v1/runs: ${res.status} ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('a Redis Cluster master failover with 100 runs in flight', () => {
  let cluster: RedisCluster;
  let worker: WorkerProcess;
  let api: ApiProcess;
  let rt: BatonRuntime;
  let prefix: string;
  /** The worker's log lines (not its probes), for a failure's message. */
  const workerLog: string[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 3000 });
    prefix = testPrefix();
    worker = await spawnWorker({
      redisUrl: cluster.url,
      prefix,
      agents: FAILOVER_AGENTS_MODULE,
      probes: false,
      readyTimeoutMs: 60_000,
      env: {
        // Production timings: a failover must not be ridden out by stealing locks.
        LEASE_TTL_MS: '15000',
        JOB_LOCK_MS: '15000',
        STALLED_INTERVAL_MS: '10000',
        RECONCILE_INTERVAL_MS: '5000',
        WORKER_CONCURRENCY: String(RUNS),
        TOOL_CONCURRENCY: String(2 * RUNS),
      },
    });
    worker.child.stdout?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '' && !line.startsWith('PROBE ')) workerLog.push(line.slice(0, 600));
    });
    worker.child.stderr?.on('data', (chunk: Buffer) => workerLog.push(chunk.toString('utf8')));
    api = await spawnApi({
      redisUrl: cluster.url,
      prefix,
      keys: `failover:${KEY}`,
      readyTimeoutMs: 60_000,
    });
    rt = new BatonRuntime({ config: testConfig(cluster.url, prefix), logger: silentLogger });
  }, 120_000);

  afterAll(async () => {
    await stopAllApiProcesses();
    await stopAllWorkerProcesses();
    await rt?.close();
    await cluster?.stop();
  });

  /** Where stuck runs stand: status, step and their last events. */
  async function describeStuck(ids: readonly string[]): Promise<string> {
    const lines: string[] = [];
    for (const id of ids) {
      const stored = await rt.store.load(id).catch(() => null);
      const events = await rt.store.readEvents(id).catch(() => []);
      lines.push(
        `${id}: ${stored?.checkpoint.status ?? 'missing'} step ${stored?.checkpoint.step ?? '?'}, last events ${events
          .slice(-4)
          .map((e) => e.type)
          .join(' ')}`,
      );
    }
    return lines.join('\n');
  }

  /** Lengths of every BullMQ list and sorted set of this prefix, on every live master. */
  async function queueLengths(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const [port, keys] of await queueKeysByMaster(cluster, prefix))
      for (const key of keys) {
        const state = /:(wait|active|delayed|prioritized|waiting-children|paused)$/.exec(key);
        if (!state) continue;
        const type = String(await cluster.nodeCommand(port, 'TYPE', key));
        const n = Number(await cluster.nodeCommand(port, type === 'list' ? 'LLEN' : 'ZCARD', key));
        if (n > 0) out[`${port} ${key.replace(/^.*\}:/, '')}`] = n;
      }
    return out;
  }

  it(
    `loses, strands, duplicates and fails no run, and the API never answers 500 (${REPEATS} repeat(s))`,
    async () => {
      const figures: Record<string, unknown>[] = [];
      for (let repeat = 1; repeat <= REPEATS; repeat += 1) {
        const executionsBefore = worker.probes.length;
        const logBefore = workerLog.length;
        const runIds = await Promise.all(
          Array.from({ length: RUNS }, (_, i) => createRun(api.url, repeat * 1000 + i)),
        );
        const http: HttpLog = { byStatus: {}, bad: [], maxMs: 0, maxUnavailableMs: 0 };
        const stopPolling = { done: false };
        const stopWatching = { done: false };
        const polling = pollApi(api.url, runIds, http, stopPolling);
        try {
          // Every run is past its first inference round and in its tools when the master dies.
          await waitFor(
            async () =>
              worker.probes.slice(executionsBefore).filter((p) => p.point === 'tool-executed')
                .length >= 20,
            60_000,
            'the runs to reach their tools',
          ).catch(async (err: unknown) => {
            throw new Error(
              `repeat ${repeat}: the runs did not reach their tools:\n${await describeStuck(runIds.slice(0, 3))}\nqueues: ${JSON.stringify(await queueLengths())}\nworker log:\n${workerLog.slice(-30).join('\n')}`,
              { cause: err },
            );
          });
          const target = await busiestQueueMaster(cluster, prefix);
          // Runs already done when the master dies do not count for resumption.
          const doneBefore = new Set<string>();
          for (const id of runIds)
            if ((await rt.store.load(id))?.checkpoint.status === 'done') doneBefore.add(id);
          const okWatch = clusterOkAgain(cluster, target.port, stopWatching);
          const killedAt = Date.now();
          await cluster.kill(target.port);
          const healthy = cluster.waitHealthy(60_000).then(() => Date.now() - killedAt);

          const finished = new Map<string, number>();
          try {
            await waitFor(
              async () => {
                for (const id of runIds) {
                  if (finished.has(id)) continue;
                  const stored = await rt.store.load(id).catch(() => null);
                  if (stored?.checkpoint.status === 'done') finished.set(id, Date.now());
                }
                return finished.size === runIds.length;
              },
              SETTLE_MS,
              'every run to finish',
            );
          } catch (err) {
            const stuck = runIds.filter((id) => !finished.has(id));
            throw new Error(
              `${stuck.length} of ${RUNS} runs never finished after the failover (repeat ${repeat}, master ${target.port} killed):\n${await describeStuck(stuck.slice(0, 3))}\nqueues: ${JSON.stringify(await queueLengths())}\nworker log:\n${workerLog.slice(-30).join('\n')}`,
              { cause: err },
            );
          }
          const healthyAfterMs = await healthy;
          stopPolling.done = true;
          await polling;
          stopWatching.done = true;
          const okAt = await okWatch;

          const problems: string[] = [];
          const executions = toolExecutions(worker.probes.slice(executionsBefore));
          for (const id of runIds) {
            const audit = await auditRun(rt, id);
            for (const p of audit.problems) problems.push(`${id}: ${p}`);
            const stored = await rt.store.load(id);
            const termination = stored?.checkpoint.termination;
            if (termination?.kind !== 'natural_end')
              problems.push(`${id}: ended ${JSON.stringify(termination)}`);
            const calls = Object.keys(audit.resultsPerCall);
            if (calls.length !== 4) problems.push(`${id}: ${calls.length} tool calls recorded`);
            for (const call of calls) {
              const n = executions.get(`${id}/${call}`) ?? 0;
              if (n !== 1) problems.push(`${id}: tool call ${call} executed ${n} times`);
            }
          }
          const lastFinishedAfterKillMs = Math.max(...finished.values()) - killedAt;
          // Resumption, from the moment every node says cluster_state:ok again: the first tool
          // call executed, the first and the last run finished (polled, so ~100 ms coarse).
          const afterOk = (t: number): number | null => (okAt === null ? null : t - okAt);
          const toolsAfterOk = worker.probes
            .slice(executionsBefore)
            .filter((p) => p.point === 'tool-executed' && okAt !== null && p.seenAt >= okAt)
            .map((p) => p.seenAt);
          const resume = {
            clusterOkAfterKillMs: okAt === null ? null : okAt - killedAt,
            firstToolAfterOkMs: toolsAfterOk.length ? afterOk(Math.min(...toolsAfterOk)) : null,
            firstRunDoneAfterOkMs: afterOk(
              Math.min(...[...finished].filter(([id]) => !doneBefore.has(id)).map(([, t]) => t)),
            ),
            lastRunDoneAfterOkMs: afterOk(Math.max(...finished.values())),
            runsDoneBeforeKill: doneBefore.size,
            // Jobs whose fetch reply was lost with the master, put back by the worker at once.
            orphansReleased: workerLog
              .slice(logBefore)
              .filter((l) => l.includes('fetch was lost in a failover'))
              .reduce((n, l) => n + Number(/"released":(\d+)/.exec(l)?.[1] ?? 0), 0),
          };
          // The run that finished last: its events since the kill, ms after the cluster was ok
          // (which step stood still, and how long), and what the worker warned about.
          const [lastRun] = [...finished].sort((a, b) => b[1] - a[1])[0] ?? [''];
          const lastRunEvents = (await rt.store.readEvents(lastRun))
            .filter((e) => e.at >= killedAt)
            .map((e) => `${e.type}@${String(e.at - (okAt ?? killedAt))}`)
            .join(' ');
          const lastRunLog = workerLog
            .slice(logBefore)
            .filter((l) => l.includes(lastRun))
            .map((l) => /"msg":"([^"]*)"/.exec(l)?.[1] ?? l.slice(0, 200));
          const warnings: Record<string, number> = {};
          for (const line of workerLog.slice(logBefore)) {
            const msg = /"msg":"([^"]*)"/.exec(line)?.[1];
            if (msg !== undefined) warnings[msg] = (warnings[msg] ?? 0) + 1;
          }
          const figure = {
            repeat,
            killedMaster: target.port,
            queueKeyShareOfKilledMaster: Math.round(target.share * 100) / 100,
            healthyAfterMs,
            lastFinishedAfterKillMs,
            ...resume,
            http: {
              ...http.byStatus,
              maxMs: http.maxMs,
              slowest: http.slowest,
              maxUnavailableMs: http.maxUnavailableMs,
            },
            problems: problems.length,
            lastRunEvents,
            lastRunLog,
            workerWarnings: warnings,
          };
          figures.push(figure);
          console.info(`[cluster-failover] ${JSON.stringify(figure)}`);
          expect(problems, problems.slice(0, 20).join('\n')).toEqual([]);
          expect(http.bad, http.bad.slice(0, 20).join('\n')).toEqual([]);
          // A 503 within half a second: asserted only where timings can be trusted (a loaded
          // 2-core CI machine stretches them), otherwise printed above.
          if (STRICT_TIMING) expect(http.maxUnavailableMs).toBeLessThanOrEqual(500);
          expect(worker.isAlive(), worker.output().slice(-3000)).toBe(true);
          expect(api.isAlive(), api.output().slice(-3000)).toBe(true);

          // The killed master comes back as a replica of the one that replaced it.
          await cluster.restart(target.port);
        } finally {
          stopWatching.done = true;
          stopPolling.done = true;
          await polling;
        }
      }
      console.info(`[cluster-failover] all repeats ${JSON.stringify(figures)}`);
    },
    REPEATS * 240_000,
  );
});
