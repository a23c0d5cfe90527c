/**
 * What holds a fairness slot (docs/fairness.md), with a window of 1 so that one slot held
 * wrongly parks the key's next run for good: a tree whose child waits for a human holds none
 * (nor after a crash lost its release), nor does a run of an agent that no live worker serves.
 */
import type { CreateRunResponse, RunSnapshot } from '@baton/protocol';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { fairnessKeyOf, keyPart } from '@baton/runtime/internal';
import { startChildStack, type ChildStack } from '@baton/testing/child-stack';
import { waitFor } from '@baton/testing/worker-harness';
import { spawnWorker, stopAllWorkerProcesses } from '@baton/testing/worker-process';

const FAIRNESS = { BATON_FAIRNESS: JSON.stringify({ window: 1 }) };

let s: ChildStack;

beforeAll(async () => {
  s = await startChildStack(inject('redisUrl'), FAIRNESS);
  await s.spawn({ env: FAIRNESS });
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await s.stop();
});

function create(agent: string, content: string) {
  return s.client.post<CreateRunResponse>('/v1/runs', {
    agent,
    input: { messages: [{ role: 'user', content }] },
  });
}

async function awaitedCall(runId: string): Promise<{ toolCallId: string; runId?: string }> {
  return waitFor(
    async () => {
      const view = await s.client.get<RunSnapshot>(`/v1/runs/${runId}`);
      return view.body.await?.calls[0] ?? null;
    },
    30_000,
    `run ${runId} to wait on a human`,
  );
}

describe('fairness slots', () => {
  it("a tree whose child waits for a human gives back its root's slot; the key's next run is admitted and finishes", async () => {
    const tree = await create('tree-sequential', 'call approval');
    expect(tree.body.queued).toBeUndefined();
    const call = await awaitedCall(tree.body.runId);
    expect(call.runId).toBeDefined();
    const next = await create('tree-sequential', 'nothing');
    const done = await s.waitDone(next.body.runId);
    expect(done.termination).toEqual({ kind: 'natural_end' });
    // The tree still waits: nobody answered it.
    expect((await s.load(tree.body.runId))?.status).not.toBe('done');
    // Answered, it finishes without a slot of its own (its next step was queued by its child).
    const decided = await s.client.post(`/v1/runs/${tree.body.runId}/decisions`, {
      decisions: [{ toolCallId: call.toolCallId, action: 'resume' }],
    });
    expect(decided.status).toBe(202);
    expect((await s.waitDone(tree.body.runId)).termination).toEqual({ kind: 'natural_end' });
  }, 90_000);

  it("a root slot whose release a crash lost after its child's waiting commit is given back by the sweep", async () => {
    const tree = await create('tree-sequential', 'call approval');
    const call = await awaitedCall(tree.body.runId);
    // The state a worker killed between the child's waiting commit and the root's release
    // leaves: the root still holds its key's only slot while its tree waits for a human.
    const { identity } = (await s.load(tree.body.runId))!;
    const key = fairnessKeyOf(identity);
    const base = `${s.prefix}:{fair:${keyPart(identity.tenantId)}}`;
    await s.rt.redis
      .multi()
      .hset(`${base}:where`, tree.body.runId, `a\t${key}`)
      .hincrby(`${base}:busy`, key, 1)
      .hincrby(`${base}:busy`, '*', 1)
      .exec();
    const next = await create('tree-sequential', 'nothing');
    expect(next.body.queued).toMatchObject({ reason: 'fairness_key_limit', inProgress: 1 });
    // The sweep sees the root's tree wait for a human and gives its slot to the next run.
    expect((await s.waitDone(next.body.runId, 30_000)).termination).toEqual({
      kind: 'natural_end',
    });
    expect(await s.rt.redis.hget(`${base}:where`, tree.body.runId)).toBeNull();
    expect((await s.load(tree.body.runId))?.status).not.toBe('done');
    const decided = await s.client.post(`/v1/runs/${tree.body.runId}/decisions`, {
      decisions: [{ toolCallId: call.toolCallId, action: 'resume' }],
    });
    expect(decided.status).toBe(202);
    expect((await s.waitDone(tree.body.runId)).termination).toEqual({ kind: 'natural_end' });
  }, 90_000);

  it('runs of an agent no live worker serves take no slot: they wait for a worker, the tenant’s other runs go on', async () => {
    // The demo set's agents are known (a worker advertised them) but nobody serves them now.
    const demo = await spawnWorker({
      redisUrl: s.redisUrl,
      prefix: s.prefix,
      agents: 'demo',
      env: FAIRNESS,
    });
    demo.kill('SIGTERM');
    await demo.waitForExit(20_000);
    // The API may have read the demo worker as live just before it stopped (its own polls of
    // GET /v1/agents while it started): liveness is cached per process, 500 ms for versions
    // and 2 s for admission's pool, so "nobody serves it" is what the API sees after that.
    await new Promise((r) => setTimeout(r, 2_500));
    const ghosts = await Promise.all([1, 2, 3].map(() => create('assistant', 'report on uptime')));
    for (const g of ghosts) {
      expect(g.status).toBe(202);
      expect(g.body.queued).toBeUndefined();
    }
    const next = await create('tree-sequential', 'nothing');
    expect(next.body.queued).toBeUndefined();
    expect((await s.waitDone(next.body.runId)).termination).toEqual({ kind: 'natural_end' });
    // The ghost runs have their jobs (they wait for a worker of their agent, not for a slot).
    for (const g of ghosts) {
      const view = await s.client.get<RunSnapshot>(`/v1/runs/${g.body.runId}`);
      expect(view.body.status).toBe('created');
      const meta = await s.rt.store.meta(g.body.runId);
      expect(
        await s.rt.queues.liveStepJob(g.body.runId, 'assistant', meta!.version),
      ).not.toBeNull();
    }
  }, 90_000);
});
