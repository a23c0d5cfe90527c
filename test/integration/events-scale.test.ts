/**
 * POST /v1/events at volume: 1,000 runs of one tenant wait over 100 correlation keys (and a few
 * of another tenant on the same keys); one event per key, sent through two API instances at
 * once, resumes exactly that key's runs of that tenant, each once. EVENTS_SCALE_RUNS scales it.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ScriptedModel, waitForEventTool, type AgentDefinition } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { waitFor } from '@baton/testing/worker-harness';

const RUNS = Number(process.env['EVENTS_SCALE_RUNS'] ?? 1_000);
const KEY_COUNT = Math.max(1, Math.round(RUNS / 10));
const OTHER_TENANT_RUNS = 20;

function waiterAgent(): AgentDefinition {
  return {
    name: 'waiter',
    model: new ScriptedModel((request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'user')
        return {
          text: 'waiting',
          toolCalls: [
            {
              name: 'baton_wait_for_event',
              arguments: { name: 'paid', key: String(last.content), timeoutMs: 600_000 },
            },
          ],
        };
      return { text: 'resumed' };
    }),
    tools: [waitForEventTool()],
    stopConditions: [{ type: 'max_rounds', rounds: 4 }],
  };
}

let c: ApiCluster;

beforeAll(async () => {
  c = await startApiCluster(inject('redisUrl'), [waiterAgent()], {
    apis: 2,
    workers: 2,
    shared: { WORKER_CONCURRENCY: '64' },
  });
});

afterAll(async () => {
  await c?.stop();
});

async function create(tenant: string, keys: readonly string[]): Promise<Map<string, string>> {
  const byRun = new Map<string, string>();
  for (let i = 0; i < keys.length; i += 100) {
    const batch = keys.slice(i, i + 100);
    const runs = await Promise.all(
      batch.map((key) =>
        c.h.client.service.createRun(tenant, {
          agent: 'waiter',
          input: { messages: [{ role: 'user', content: key }] },
        }),
      ),
    );
    runs.forEach((r, j) => byRun.set(r.runId, batch[j]!));
  }
  return byRun;
}

describe('events at volume', () => {
  it(`resumes exactly the ${RUNS} runs waiting over ${KEY_COUNT} keys`, async () => {
    const keyOf = (i: number): string => `order-${String(i % KEY_COUNT)}`;
    const mine = await create(
      'tenant-a',
      Array.from({ length: RUNS }, (_, i) => keyOf(i)),
    );
    const theirs = await create(
      'tenant-b',
      Array.from({ length: OTHER_TENANT_RUNS }, (_, i) => keyOf(i)),
    );
    const redis = c.h.client.redis;
    const setOf = (tenant: string, key: string): string =>
      `${c.h.prefix}:{evw:${tenant}:paid:${key}}`;
    const registered = async (): Promise<number> => {
      let n = 0;
      for (let k = 0; k < KEY_COUNT; k += 1) n += await redis.scard(setOf('tenant-a', keyOf(k)));
      return n;
    };
    await waitFor(async () => (await registered()) === RUNS, 120_000, `${RUNS} waiters`);

    const clients = c.apis.map((api) => new ApiClient(api.url, KEYS.a));
    const answers = await Promise.all(
      Array.from({ length: KEY_COUNT }, async (_, k) => {
        const r = await clients[k % clients.length]!.post<{ resumed: number; runs: string[] }>(
          '/v1/events',
          { name: 'paid', key: keyOf(k), data: { k } },
        );
        expect(r.status).toBe(200);
        return { key: keyOf(k), ...r.body };
      }),
    );
    expect(answers.reduce((n, a) => n + a.resumed, 0)).toBe(RUNS);
    for (const a of answers) {
      const expected = [...mine].filter(([, key]) => key === a.key).map(([id]) => id);
      expect([...a.runs].sort()).toEqual(expected.sort());
    }

    // Each run finished with exactly one decision, the event of its own key.
    await waitFor(
      async () => {
        const statuses = await Promise.all(
          [...mine.keys()].map((id) => c.h.client.service.statusOf('tenant-a', id)),
        );
        return statuses.every((s) => s === 'done');
      },
      120_000,
      'every resumed run to finish',
    );
    for (const [runId, key] of mine) {
      const events: RunEvent[] = await c.h.client.service.events('tenant-a', runId);
      const applied = events.filter((e) => e.type === 'decision.applied');
      expect(applied).toHaveLength(1);
      expect(applied[0]).toMatchObject({
        decision: { source: 'event', payload: { event: { key } } },
      });
    }
    // Tenant b's runs on the same keys still wait.
    for (const runId of theirs.keys())
      expect(await c.h.client.service.statusOf('tenant-b', runId)).toBe('waiting');
  }, 300_000);
});
