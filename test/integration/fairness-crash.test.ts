/**
 * Fairness slots belong to runs, not workers: a worker process killed while its runs hold their
 * key's slots loses neither a run's place nor a slot, and a slot whose run is gone is given back
 * by the reconciler.
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const TENANT = 't-fair-crash';
const FAIRNESS = JSON.stringify({ window: 2 });

describe('fairness across a worker crash', () => {
  const redisUrl = inject('redisUrl');
  const prefix = testPrefix();
  const client = new BatonRuntime({
    config: testConfig(redisUrl, prefix, { BATON_FAIRNESS: FAIRNESS }),
    logger: silentLogger,
  });
  afterAll(async () => {
    await stopAllWorkerProcesses();
    await client.close();
  });

  const keyStats = async () =>
    (await client.admission.stats()).find((s) => s.tenantId === TENANT && s.key === TENANT);

  it('a worker killed holding slots: every run finishes, the slots come back', async () => {
    const env = { BATON_FAIRNESS: FAIRNESS };
    const first = await spawnWorker({ redisUrl, prefix, agents: 'demo', env });
    const runIds: string[] = [];
    for (let i = 0; i < 6; i += 1)
      runIds.push(
        (
          await client.service.createRun(TENANT, {
            agent: 'assistant',
            input: { messages: [{ role: 'user', content: `report on uptime ${String(i)}` }] },
          })
        ).runId,
      );
    // Two hold the key's slots and run their slow tool on the first worker; four wait.
    await waitFor(
      async () => {
        let running = 0;
        for (const id of runIds) {
          const cp = (await client.store.load(id))?.checkpoint;
          if (Object.values(cp?.calls ?? {}).some((c) => c.status === 'running')) running += 1;
        }
        return running === 2;
      },
      15_000,
      'two runs in their slow tool',
    );
    expect(await keyStats()).toMatchObject({ inProgress: 2, backlog: 4 });
    first.kill('SIGKILL');
    await first.exited;
    await spawnWorker({ redisUrl, prefix, agents: 'demo', env });
    for (const id of runIds)
      await waitFor(
        async () => (await client.store.meta(id))?.status === 'done',
        30_000,
        `run ${id} done`,
      );
    for (const id of runIds)
      expect((await client.store.load(id))!.checkpoint.termination).toEqual({
        kind: 'natural_end',
      });
    // Each run was admitted once (a retried job kept its run's slot), all slots are back (a
    // run's slot is given back just after its final commit: waited for, not assumed).
    const settled = await waitFor(
      async () => {
        const row = await keyStats();
        return row?.inProgress === 0 ? row : null;
      },
      10_000,
      'the slots given back',
    );
    expect(settled).toMatchObject({ inProgress: 0, backlog: 0, dispatched: 6 });
  }, 60_000);

  it('a slot held by a run that is gone is given back by the reconciler', async () => {
    // Admitted, then its record vanished without a release (as after a crash between the two).
    const queued = await client.admission.request(
      { runId: 'never-created', tenantId: TENANT, agent: 'assistant' },
      'start',
      1,
    );
    expect(queued).toBeNull();
    expect((await keyStats())?.inProgress).toBe(1);
    await waitFor(async () => (await keyStats())?.inProgress === 0, 15_000, 'slot given back');
  }, 30_000);
});
