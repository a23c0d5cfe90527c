/**
 * Routing under kill -9: two worker PROCESSES with disjoint agents (the demo set, and an agent
 * loaded from a module path). Killing every worker of one agent leaves the other agent's runs
 * unaffected; the killed agent's runs wait for a worker and finish when one comes back.
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { BatonRuntime } from '@baton/runtime';
import { silentLogger, testConfig, testPrefix, waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const TENANT = 't-route-kill';
const clients: BatonRuntime[] = [];

afterAll(async () => {
  await stopAllWorkerProcesses();
  await Promise.all(clients.map((c) => c.close()));
});

describe('two worker pools, one killed', () => {
  it("kill -9 of every 'assistant' worker leaves the 'echo' runs unaffected", async () => {
    const redisUrl = inject('redisUrl');
    const prefix = testPrefix();
    const client = new BatonRuntime({ config: testConfig(redisUrl, prefix), logger: silentLogger });
    clients.push(client);
    const demo = await spawnWorker({ redisUrl, prefix, agents: 'demo', probes: false });
    await spawnWorker({ redisUrl, prefix, agents: './examples/my-agents.ts:echo', probes: false });
    demo.kill('SIGKILL');
    await demo.waitForExit();

    const create = (agent: string, content: string) =>
      client.service.createRun(TENANT, { agent, input: { messages: [{ role: 'user', content }] } });
    const echo = await Promise.all(
      Array.from({ length: 20 }, (_, i) => create('echo', `count ${i} words`)),
    );
    const assistant = await Promise.all(
      Array.from({ length: 10 }, (_, i) => create('assistant', `weather in city ${i}?`)),
    );
    const status = async (runId: string) => (await client.store.meta(runId))?.status;
    await waitFor(
      async () =>
        (await Promise.all(echo.map((r) => status(r.runId)))).every((s) => s === 'done')
          ? true
          : null,
      30_000,
      'every echo run to finish',
    );
    for (const r of echo)
      expect((await client.store.load(r.runId))!.checkpoint.termination).toEqual({
        kind: 'natural_end',
      });
    // Nobody runs 'assistant' now: its runs wait in their own queue, untouched.
    expect(await Promise.all(assistant.map((r) => status(r.runId)))).toEqual(
      assistant.map(() => 'created'),
    );
    await spawnWorker({ redisUrl, prefix, agents: 'demo', probes: false });
    await waitFor(
      async () =>
        (await Promise.all(assistant.map((r) => status(r.runId)))).every((s) => s === 'done')
          ? true
          : null,
      30_000,
      'the assistant runs to finish once a worker is back',
    );
  }, 60_000);
});
