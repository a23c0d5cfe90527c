/**
 * A run only the archive (PostgreSQL) still has forks like a live one: the fork reads the
 * original's checkpoint and events through the same reads as GET /v1/runs/:id, and its log
 * opens with the archived events.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, eventsOf } from '@baton/testing/api-harness';
import { startArchivedStack, type ArchivedStack } from '@baton/testing/archive-stack';
import { bodyJson } from '@baton/testing/fork-agents';

let stack: ArchivedStack;
let api: ApiClient;

beforeAll(async () => {
  stack = await startArchivedStack('fork_archived', inject('redisUrl'));
  api = new ApiClient(stack.c.apis[0]!.url, KEYS.a);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

describe('forking an archived run', () => {
  it('forks after Redis let the run go: same prefix, the fork runs to its end', async () => {
    const { runId, threadId } = await api.createRun('assistant', 'hello archive');
    const live = eventsOf(await api.stream(`/v1/runs/${runId}/events`, { timeoutMs: 30_000 }));
    await stack.forgotten('tenant-a', threadId, [runId]);
    const atSeq = live.filter((e) => e.type === 'message.input').at(-1)!.seq;
    const r = await api.post<{ runId: string; error?: unknown }>(`/v1/runs/${runId}/fork`, {
      atSeq,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const forked = eventsOf(
      await api.stream(`/v1/runs/${r.body.runId}/events`, { timeoutMs: 30_000 }),
    );
    expect(forked.slice(0, atSeq).map(bodyJson)).toEqual(live.slice(0, atSeq).map(bodyJson));
    expect(forked.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
    const other = await api.withKey(KEYS.b).post(`/v1/runs/${runId}/fork`, { atSeq });
    expect(other.status).toBe(404);
  });
});
