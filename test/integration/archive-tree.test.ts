/**
 * A run tree (agent-as-tool) streamed with ?children=1 reads the same once Redis let its runs
 * go: every run's events come from the archive, and the stream ends as it did live.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RunEvent } from '@baton/protocol';
import { startChildStack, type ChildStack } from '@baton/testing/child-stack';
import { createTestDatabase, type TestDatabase } from '@baton/testing/postgres';
import type { SseMessage } from '@baton/testing/sse-client';
import { waitFor } from '@baton/testing/worker-harness';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

let db: TestDatabase;
let s: ChildStack;

beforeAll(async () => {
  db = await createTestDatabase('archive_tree');
  const env = {
    ARCHIVE_URL: db.url,
    ARCHIVE_INTERVAL_MS: '50',
    EVENT_RETENTION_SECONDS: '1',
    THREAD_TTL_SECONDS: '1',
  };
  s = await startChildStack(inject('redisUrl'), env);
  await s.spawn({ env: { ...env, RECONCILE_INTERVAL_MS: '300' } });
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await s?.stop();
  await db?.drop();
});

/** Each run's frames in order (the interleaving of runs is the stream's, not the log's). */
function perRun(messages: readonly SseMessage[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of messages) {
    const e = JSON.parse(m.data) as RunEvent;
    (out[e.runId] ??= []).push(m.data);
  }
  return out;
}

describe('archived run trees', () => {
  it('?children=1 replays the whole tree from the archive and ends', async () => {
    const { runId } = await s.client.createRun('tree-batch', 'call answer_new');
    const live = await s.client.stream(`/v1/runs/${runId}/events?children=1`, {
      timeoutMs: 60_000,
    });
    expect(live.status).toBe(200);
    expect(live.endedByServer).toBe(true);
    const runs = Object.keys(perRun(live.messages));
    expect(runs.length).toBeGreaterThan(1);
    await waitFor(
      async () => (await Promise.all(runs.map((id) => s.rt.store.meta(id)))).every((m) => !m),
      30_000,
      'the tree gone from Redis',
    );
    const cold = await s.client.stream(`/v1/runs/${runId}/events?children=1`, {
      timeoutMs: 30_000,
    });
    expect(cold.status).toBe(200);
    expect(cold.endedByServer).toBe(true);
    expect(perRun(cold.messages)).toEqual(perRun(live.messages));
    const run = await s.client.get<{ status: string }>(`/v1/runs/${runId}`);
    expect(run.body.status).toBe('done');
  });
});
