/**
 * Two worker PROCESSES share the steps of many concurrent runs. Every run must finish with a
 * clean history, and the work must really be spread over both processes (seen from the probe
 * lines each process prints, which the fixture tags with the process's pid).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import type { Checkpoint } from '@baton/protocol';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import {
  auditRun,
  spawnWorker,
  stopAllWorkerProcesses,
  type WorkerProcess,
} from '@baton/testing/worker-process';

const PARALLEL_RUNS = 100;
const SEQUENTIAL_RUNS = 20;
const TENANT = 't-scale';

describe('two worker processes, many concurrent runs', () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  let client: BatonRuntime;
  let workers: WorkerProcess[] = [];

  beforeAll(async () => {
    client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
    workers = await Promise.all(
      [0, 1].map(() => spawnWorker({ redisUrl, prefix, agents: 'bench' })),
    );
  });

  afterAll(async () => {
    await stopAllWorkerProcesses();
    await client?.close();
  });

  it(
    `finishes ${PARALLEL_RUNS} parallel_streaming + ${SEQUENTIAL_RUNS} sequential runs with clean histories, spread over both processes`,
    { timeout: 90_000 },
    async () => {
      const started = Date.now();
      const created = await Promise.all([
        ...Array.from({ length: PARALLEL_RUNS }, (_, i) =>
          client.service.createRun(TENANT, {
            agent: 'bench',
            input: { messages: [{ role: 'user', content: `run ${i}` }] },
          }),
        ),
        ...Array.from({ length: SEQUENTIAL_RUNS }, (_, i) =>
          client.service.createRun(TENANT, {
            agent: 'bench-sequential',
            input: { messages: [{ role: 'user', content: `seq ${i}` }] },
          }),
        ),
      ]);
      const ids = created.map((r) => r.runId);
      expect(new Set(ids).size).toBe(ids.length);

      const finals = await waitFor(
        async () => {
          const loaded = await Promise.all(ids.map((id) => client.store.load(id)));
          return loaded.every((s) => s?.checkpoint.status === 'done')
            ? loaded.map((s) => s!.checkpoint)
            : null;
        },
        60_000,
        'every run to be done',
      );
      const wallMs = Date.now() - started;

      for (const cp of finals) {
        expect(cp.termination, cp.identity.runId).toEqual({ kind: 'natural_end' });
        expect(cp.step).toBe(3);
      }
      const audits = await Promise.all(ids.map((id) => auditRun(client, id)));
      const problems = audits.flatMap((a, i) => a.problems.map((p) => `${ids[i]}: ${p}`));
      expect(problems).toEqual([]);
      for (const a of audits) {
        expect(a.assistantSteps).toEqual([1, 2, 3]);
        // 2 tools in each of the first two steps, one result each.
        expect(Object.values(a.resultsPerCall)).toEqual([1, 1, 1, 1]);
        expect(a.events.filter((e) => e.type === 'run.started')).toHaveLength(1);
      }

      // Spread: both processes inferred steps and (for the parallel runs) executed tool jobs.
      const mine = new Set(ids);
      const inferences = workers.map((w) =>
        w.probes.filter((p) => p.point === 'before-infer' && mine.has(p['runId'] as string)),
      );
      const toolJobs = workers.map((w) =>
        w.probes.filter((p) => p.point === 'before-tool' && p['inline'] === false),
      );
      const total = ids.length * 3;
      for (const [i, list] of inferences.entries())
        expect(list.length, `inferences on worker ${i}`).toBeGreaterThan(total * 0.1);
      for (const [i, list] of toolJobs.entries())
        expect(list.length, `tool jobs on worker ${i}`).toBeGreaterThan(0);
      // One inference per step: nobody inferred a step twice (no crash here, so no retry either).
      const perStep = new Map<string, number>();
      for (const p of inferences.flat())
        perStep.set(
          `${p['runId'] as string}#${p['step'] as number}`,
          (perStep.get(`${p['runId'] as string}#${p['step'] as number}`) ?? 0) + 1,
        );
      expect(perStep.size).toBe(total);
      expect([...perStep.values()].every((n) => n === 1)).toBe(true);
      // Runs really moved between processes: many runs had steps on both.
      const stepsOn = new Map<string, Set<number>>();
      for (const p of inferences.flat())
        stepsOn.set(
          p['runId'] as string,
          (stepsOn.get(p['runId'] as string) ?? new Set()).add(p.pid),
        );
      const migrated = [...stepsOn.values()].filter((s) => s.size === 2).length;
      expect(migrated).toBeGreaterThan(0);

      const seqFinals: Checkpoint[] = finals.slice(PARALLEL_RUNS);
      expect(seqFinals.every((cp) => cp.executionMode === 'sequential')).toBe(true);
      console.info(
        `[worker-scale] ${ids.length} runs (${PARALLEL_RUNS} parallel_streaming, ${SEQUENTIAL_RUNS} sequential) done in ${wallMs} ms; ` +
          `inferences per process ${inferences.map((l) => l.length).join('/')}, tool jobs per process ${toolJobs.map((l) => l.length).join('/')}, ` +
          `runs with steps on both processes ${migrated}/${ids.length}`,
      );
    },
  );

  it(
    'a process SIGKILLed in the middle of 60 runs: the survivor finishes all of them cleanly',
    { timeout: 90_000 },
    async () => {
      const prefix2 = testPrefix();
      const client2 = new BatonRuntime({
        config: testConfig(redisUrl, prefix2),
        logger: silentLogger,
      });
      try {
        const [victim, survivor] = await Promise.all(
          [0, 1].map(() => spawnWorker({ redisUrl, prefix: prefix2, agents: 'bench' })),
        );
        const runs = await Promise.all(
          Array.from({ length: 60 }, (_, i) =>
            client2.service.createRun(TENANT, {
              agent: i % 4 === 0 ? 'bench-sequential' : 'bench',
              input: { messages: [{ role: 'user', content: `r${i}` }] },
            }),
          ),
        );
        const ids = runs.map((r) => r.runId);
        // Kill the victim while it is busy: after it has inferred a good number of steps.
        await waitFor(
          async () => victim!.probes.filter((p) => p.point === 'before-infer').length >= 20,
          20_000,
          'the victim to be busy',
        );
        victim!.kill('SIGKILL');
        const killedAt = (await victim!.waitForExit()).at;
        const unfinishedAtKill = (
          await Promise.all(ids.map((id) => client2.store.load(id)))
        ).filter((st) => st?.checkpoint.status !== 'done').length;
        const finals = await waitFor(
          async () => {
            const loaded = await Promise.all(ids.map((id) => client2.store.load(id)));
            return loaded.every((s) => s?.checkpoint.status === 'done')
              ? loaded.map((s) => s!.checkpoint)
              : null;
          },
          45_000,
          'every run to be done after the crash',
        );
        const recoveredMs = Date.now() - killedAt;
        for (const cp of finals)
          expect(cp.termination, cp.identity.runId).toEqual({ kind: 'natural_end' });
        const audits = await Promise.all(ids.map((id) => auditRun(client2, id)));
        expect(audits.flatMap((a, i) => a.problems.map((p) => `${ids[i]}: ${p}`))).toEqual([]);
        for (const a of audits) {
          expect(a.assistantSteps).toEqual([1, 2, 3]);
          expect(Object.values(a.resultsPerCall)).toEqual([1, 1, 1, 1]);
        }
        expect(survivor!.isAlive()).toBe(true);
        console.info(
          `[worker-scale] crash of 1 of 2 processes mid-load: ${ids.length} runs (${unfinishedAtKill} unfinished at the kill) all done ${recoveredMs} ms after the kill`,
        );
      } finally {
        await client2.close();
      }
    },
  );
});
