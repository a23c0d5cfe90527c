/**
 * Issue 32's acceptance test for a Redis Cluster failover: runs are created BEFORE, DURING and
 * AFTER the kill of a master (the one holding the most queue keys), each with its own
 * Idempotency-Key and resent as docs/http-api.md asks (same key and body, after a 503, a 409 or
 * any 5xx), with the worker's production timings and its PRODUCTION reconcile interval (30 s: a
 * run whose start was lost may not wait for the reconciler). It asserts, each as its own
 * failure message:
 * - lost: every accepted run exists, and ends done (natural end);
 * - stuck: no accepted run stands still more than 10 s once the cluster is ok again (after
 *   cluster_state:ok, or after its acceptance if later);
 * - duplicated: each key answers one run id whatever the number of resends, each tool call is
 *   executed once, no run's events are doubled;
 * - errored: no 500 (or other non-503 5xx) to any request, no run ends in error;
 * - keys: every Idempotency-Key is accepted (202) within 2 s of cluster_state:ok;
 * - listed: every accepted run is in GET /v1/runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import { spawnApi, stopAllApiProcesses, type ApiProcess } from '@baton/testing/api-process';
import {
  busiestQueueMaster,
  clusterOkAgain,
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

const KEY = 'failover-creates-tenant-key';
/** Runs created before the kill (in flight when it dies), and keys sent per phase after. */
const BEFORE = 20;
const DURING_PER_TICK = 2;
/** Keys sent while the cluster is failing over (2 every 250 ms from the kill, at most this many). */
const DURING_MAX = 30;
const AFTER = 20;
const STUCK_MS = 10_000;
const KEY_AFTER_OK_MS = 2_000;
const SETTLE_MS = 180_000;

type Phase = 'before' | 'during' | 'after';

interface Creation {
  readonly n: number;
  readonly key: string;
  readonly phase: Phase;
  readonly sentAt: number;
  /** Every answer, in order: status (or the network error's name) and ms since sentAt. */
  readonly answers: string[];
  runIds: Set<string>;
  acceptedAt?: number;
}

describe('a Redis Cluster master failover with runs created before, during and after it', () => {
  let cluster: RedisCluster;
  let worker: WorkerProcess;
  let api: ApiProcess;
  let rt: BatonRuntime;
  let prefix: string;
  const workerLog: string[] = [];
  /** The slowest single attempt answered 503 (ms). */
  let slowest503 = 0;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 3000 });
    prefix = testPrefix();
    worker = await spawnWorker({
      redisUrl: cluster.url,
      prefix,
      agents: FAILOVER_AGENTS_MODULE,
      probes: false,
      readyTimeoutMs: 60_000,
      // Production timings, RECONCILE_INTERVAL_MS included (its default): nothing shortened.
      env: { WORKER_CONCURRENCY: '200', TOOL_CONCURRENCY: '400' },
    });
    worker.child.stdout?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '' && !line.startsWith('PROBE ')) workerLog.push(line.slice(0, 600));
    });
    api = await spawnApi({
      redisUrl: cluster.url,
      prefix,
      keys: `failover-creates:${KEY}`,
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

  /** Sends one keyed create until it is accepted (202), as a client following the docs would. */
  async function create(c: Creation, stop: { done: boolean }): Promise<void> {
    const body = JSON.stringify({
      agent: 'failover',
      input: { messages: [{ role: 'user', content: `failover-creates ${c.key}` }] },
    });
    while (!stop.done) {
      let status: string;
      let runId: string | undefined;
      const attemptAt = Date.now();
      try {
        const res = await fetch(`${api.url}/v1/runs`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${KEY}`,
            'content-type': 'application/json',
            'idempotency-key': c.key,
          },
          body,
          signal: AbortSignal.timeout(15_000),
        });
        status = String(res.status);
        const answer = (await res.json().catch(() => ({}))) as { runId?: string };
        runId = answer.runId;
      } catch (error) {
        status = (error as Error).name;
      }
      c.answers.push(`${status}@${String(Date.now() - c.sentAt)}`);
      if (status === '503') slowest503 = Math.max(slowest503, Date.now() - attemptAt);
      if (runId !== undefined && /^2/.test(status)) c.runIds.add(runId);
      if (status === '202' || status === '200') {
        c.acceptedAt ??= Date.now();
        return;
      }
      if (/^4/.test(status) && status !== '409' && status !== '429')
        throw new Error(`${c.key}: ${status} is not retryable (${c.answers.join(' ')})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Every run id GET /v1/runs lists for the tenant (all pages). */
  async function listed(): Promise<Set<string>> {
    const ids = new Set<string>();
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const res = await fetch(`${api.url}/v1/runs?limit=100${query}`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      if (res.status !== 200) throw new Error(`GET /v1/runs: ${res.status} ${await res.text()}`);
      const page = (await res.json()) as { runs: { runId: string }[]; nextCursor: string | null };
      for (const run of page.runs) ids.add(run.runId);
      cursor = page.nextCursor;
    } while (cursor !== null);
    return ids;
  }

  it('loses, strands, duplicates and fails no run; every key is accepted within 2 s of cluster_state:ok; every run is listed', async () => {
    const executionsBefore = worker.probes.length;
    const creations: Creation[] = [];
    const stopCreating = { done: false };
    const sending: Promise<void>[] = [];
    let n = 0;
    const send = (phase: Phase): void => {
      n += 1;
      const c: Creation = {
        n,
        key: `fc-${phase}-${String(n)}`,
        phase,
        sentAt: Date.now(),
        answers: [],
        runIds: new Set(),
      };
      creations.push(c);
      sending.push(
        create(c, stopCreating).catch((error: unknown) => void c.answers.push(String(error))),
      );
    };

    // BEFORE: accepted and in their tools when the master dies.
    for (let i = 0; i < BEFORE; i += 1) send('before');
    await Promise.all(sending);
    await waitFor(
      async () =>
        worker.probes.slice(executionsBefore).filter((p) => p.point === 'tool-executed').length >=
        10,
      60_000,
      'the first runs to reach their tools',
    );
    const { port: target } = await busiestQueueMaster(cluster, prefix);
    const stopWatching = { done: false };
    const okWatch = clusterOkAgain(cluster, target, stopWatching);
    const killedAt = Date.now();
    await cluster.kill(target);

    // DURING: new keys every 250 ms from the kill until the cluster is ok again.
    let okAt: number | null = null;
    void okWatch.then((t) => (okAt = t));
    let during = 0;
    while (okAt === null && Date.now() - killedAt < 60_000) {
      for (let i = 0; i < DURING_PER_TICK && during < DURING_MAX; i += 1, during += 1)
        send('during');
      await new Promise((r) => setTimeout(r, 250));
    }
    stopWatching.done = true;
    okAt ??= await okWatch;
    if (okAt === null) throw new Error('the cluster did not say cluster_state:ok within 60 s');
    // AFTER: right after cluster_state:ok, and a few seconds later.
    for (let i = 0; i < AFTER / 2; i += 1) send('after');
    await new Promise((r) => setTimeout(r, 3_000));
    for (let i = 0; i < AFTER / 2; i += 1) send('after');

    // Every key gets its answer (or the settle time ends).
    const settled = Promise.all(sending);
    const timer = setTimeout(() => (stopCreating.done = true), SETTLE_MS);
    await settled;
    clearTimeout(timer);
    const accepted = creations.filter((c) => c.acceptedAt !== undefined);
    const runIds = [...new Set(accepted.flatMap((c) => [...c.runIds]))];

    // The runs finish (or the settle time ends): their last state is what is judged.
    const finished = new Map<string, number>();
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
      'every accepted run to finish',
    ).catch(() => undefined);
    const okTime = okAt ?? killedAt;

    const failures: Record<string, string[]> = {
      lost: [],
      stuck: [],
      duplicated: [],
      errored: [],
      keys: [],
      listed: [],
    };
    const executions = toolExecutions(worker.probes.slice(executionsBefore));
    for (const c of creations) {
      const where = `${c.key} (${c.phase}; answers ${c.answers.join(' ')})`;
      if (c.acceptedAt === undefined) failures['keys']!.push(`${where}: never accepted`);
      else if (c.acceptedAt - Math.max(okTime, c.sentAt) > KEY_AFTER_OK_MS)
        failures['keys']!.push(
          `${where}: accepted ${String(c.acceptedAt - Math.max(okTime, c.sentAt))} ms after cluster_state:ok (or after it was first sent, if later)`,
        );
      if (c.runIds.size > 1)
        failures['duplicated']!.push(`${where}: answered ${c.runIds.size} run ids`);
      const serverErrors = c.answers.filter((a) => /^5\d\d@/.test(a) && !a.startsWith('503@'));
      if (serverErrors.length > 0) failures['errored']!.push(`${where}: ${serverErrors.join(' ')}`);
    }
    const phaseOf = (id: string): Phase | '?' =>
      accepted.find((c) => c.runIds.has(id))?.phase ?? '?';
    for (const id of runIds) {
      const stored = await rt.store.load(id).catch(() => null);
      if (!stored) {
        failures['lost']!.push(`${id} (${phaseOf(id)}): accepted, but no such run`);
        continue;
      }
      if (!finished.has(id))
        failures['lost']!.push(
          `${id}: ${stored.checkpoint.status} after ${String(SETTLE_MS / 1000)} s`,
        );
      const termination = stored.checkpoint.termination;
      if (finished.has(id) && termination?.kind !== 'natural_end')
        failures['errored']!.push(`${id}: ended ${JSON.stringify(termination)}`);
      const audit = await auditRun(rt, id);
      for (const p of audit.problems)
        (/duplicate|doubled|twice/.test(p) ? failures['duplicated']! : failures['lost']!).push(
          `${id}: ${p}`,
        );
      for (const call of Object.keys(audit.resultsPerCall)) {
        const times = executions.get(`${id}/${call}`) ?? 0;
        if (times > 1)
          failures['duplicated']!.push(
            `${id} (${phaseOf(id)}): tool call ${call} executed ${String(times)} times`,
          );
      }
      // Standing still: from when the cluster was ok again (or the run's acceptance, if later),
      // the longest wait for its next event, until it finished.
      const creation = accepted.find((c) => c.runIds.has(id));
      const from = Math.max(okTime, creation?.acceptedAt ?? 0);
      const times = audit.events.map((e) => Number(e['at'])).filter((t) => t >= from);
      const end = finished.get(id) ?? Date.now();
      let last = from;
      let longest = 0;
      for (const t of [...times, ...(times.length && finished.has(id) ? [] : [end])]) {
        longest = Math.max(longest, t - last);
        last = t;
      }
      if (longest > STUCK_MS)
        failures['stuck']!.push(
          `${id} (${creation?.phase ?? '?'}): stood still ${String(longest)} ms after cluster_state:ok`,
        );
    }
    const list = await listed();
    for (const id of runIds)
      if (!list.has(id)) failures['listed']!.push(`${id}: not in GET /v1/runs`);

    const figures = {
      killedMaster: target,
      clusterOkAfterKillMs: okAt === null ? null : okAt - killedAt,
      keys: creations.length,
      accepted: accepted.length,
      byPhase: Object.fromEntries(
        (['before', 'during', 'after'] as const).map((p) => [
          p,
          creations.filter((c) => c.phase === p).length,
        ]),
      ),
      slowest503Ms: slowest503,
      slowestAcceptAfterOkMs: Math.max(...accepted.map((c) => c.acceptedAt! - okTime)),
      failures: Object.fromEntries(Object.entries(failures).map(([k, v]) => [k, v.length])),
    };
    console.info(`[cluster-failover-creates] ${JSON.stringify(figures)}`);
    const report = Object.entries(failures)
      .filter(([, v]) => v.length > 0)
      .map(([k, v]) => `${k} (${String(v.length)}):\n  ${v.slice(0, 8).join('\n  ')}`)
      .join('\n');
    expect(report, `${report}\nworker log:\n${workerLog.slice(-20).join('\n')}`).toBe('');
    expect(worker.isAlive()).toBe(true);
    expect(api.isAlive()).toBe(true);
  }, 420_000);
});
