/**
 * Borrowing (docs/fairness.md): admission is work-conserving. A lone fairness key over its
 * window runs in the pool's idle step slots instead of parking while the workers sit idle, up to
 * the pool's slots less one window; a newcomer key still gets its slot (another tenant's at once,
 * its own tenant's at the next in-window slot, ahead of the lone key's backlog), and borrowing
 * stops while it waits.
 */
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import type { CreateRunRequest } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { startHarness, waitForStatus, type Harness } from '@baton/testing/worker-harness';

/** A tiny window and its default borrowing, on a worker of 16 step slots: 14 may borrow. */
const WINDOW = 2;
const SLOTS = 16;
const BORROW_LIMIT = SLOTS - WINDOW;
const OVERRIDES = {
  WORKER_CONCURRENCY: String(SLOTS),
  BATON_FAIRNESS: JSON.stringify({ window: WINDOW, borrow: true }),
};

const napper: AgentDefinition = {
  name: 'napper',
  model: new ScriptedModel((request) =>
    request.messages.some((m) => m.role === 'tool')
      ? { text: 'rested' }
      : { toolCalls: [{ name: 'nap', arguments: {} }] },
  ),
  tools: [
    defineTool({
      name: 'nap',
      description: 'sleeps a little',
      inputSchema: z.object({}),
      execute: async () => {
        await systemClock.sleep(150);
        return toolResult.success({ ok: true });
      },
    }),
  ],
  executionMode: 'sequential',
};

function ask(fairnessKey: string): CreateRunRequest {
  return {
    agent: 'napper',
    input: { messages: [{ role: 'user', content: 'nap' }] },
    options: { fairnessKey },
  };
}

async function startedAt(h: Harness, runId: string): Promise<number> {
  const started = (await h.client.store.readEvents(runId)).find((e) => e.type === 'run.started');
  if (!started) throw new Error(`run ${runId} has not started`);
  return started.at;
}

describe('fairness borrowing', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('a lone key over its window is not parked while the pool has idle slots', async () => {
    h = await startHarness(inject('redisUrl'), [napper], { overrides: OVERRIDES });
    const harness = h;
    const runs = await Promise.all(
      Array.from({ length: BORROW_LIMIT }, () =>
        harness.client.service.createRun('tenant-a', ask('solo')),
      ),
    );
    // Five windows' worth, none parked: the worker's 16 slots were idle.
    expect(runs.filter((r) => r.queued !== undefined)).toEqual([]);
    for (const r of runs) await waitForStatus(harness, r.runId, ['done'], 20_000);
  }, 30_000);

  it("borrowing is bounded to leave a window free; a newcomer key gets its slot ahead of the lone key's backlog", async () => {
    h = await startHarness(inject('redisUrl'), [napper], { overrides: OVERRIDES });
    const harness = h;
    // Nothing finishes while the flood is created (the worker stays live): the counts are exact.
    const queues = harness.client.queues.shardQueues('default');
    await Promise.all(queues.map((q) => q.pause()));
    const flood = [];
    for (let i = 0; i < BORROW_LIMIT + 6; i += 1)
      flood.push(await harness.client.service.createRun('tenant-a', ask('flood')));
    const parked = flood.filter((r) => r.queued !== undefined);
    expect(parked.length).toBe(6);
    // Only the window counts as the key's in progress; the borrowed runs hold no window slot.
    expect(parked[0]!.queued).toMatchObject({ reason: 'fairness_key_limit', inProgress: WINDOW });
    // Another tenant's run is not held back at all.
    const other = await harness.client.service.createRun('tenant-b', ask('other'));
    expect(other.queued).toBeUndefined();
    // The tenant's other key waits for its tenant's window (its in-window slots are the flood's)…
    const newcomer = await harness.client.service.createRun('tenant-a', ask('newcomer'));
    expect(newcomer.queued).toMatchObject({ reason: 'tenant_limit', position: 1 });
    await Promise.all(queues.map((q) => q.resume()));
    await waitForStatus(harness, other.runId, ['done'], 20_000);
    await waitForStatus(harness, newcomer.runId, ['done'], 20_000);
    for (const r of parked) await waitForStatus(harness, r.runId, ['done'], 20_000);
    // …and takes the first one that frees: borrowed runs ending meanwhile lend their room to
    // nobody while it waits, so no run of the flood's backlog starts before it.
    const newcomerStart = await startedAt(harness, newcomer.runId);
    for (const r of parked)
      expect(await startedAt(harness, r.runId)).toBeGreaterThanOrEqual(newcomerStart);
  }, 40_000);
});
