/**
 * ARCHIVE_URL on, with short Redis retention: a run read through the API before and after
 * Redis let it go gives the same bodies (run, event replay, SSE after Last-Event-ID, lists with
 * cursors, thread and its runs), another tenant still gets 404, a thread Redis forgot continues
 * from the archive, and DELETE removes from both stores for good.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiClient, KEYS, eventsOf, type ApiCluster } from '@baton/testing/api-harness';
import { startArchivedStack, type ArchivedStack } from '@baton/testing/archive-stack';

interface RunsPage {
  readonly runs: { readonly runId: string }[];
  readonly nextCursor: string | null;
}
interface ThreadBody {
  readonly messages: { readonly content: unknown }[];
  readonly runIds: string[];
}
const contentsOf = (thread: ThreadBody): unknown[] => thread.messages.map((m) => m.content);

let stack: ArchivedStack;
let c: ApiCluster;
let api: ApiClient;
let other: ApiClient;

beforeAll(async () => {
  stack = await startArchivedStack('archive_read_through', inject('redisUrl'));
  c = stack.c;
  api = new ApiClient(c.apis[0]!.url, KEYS.a);
  other = new ApiClient(c.apis[0]!.url, KEYS.b);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

async function finishedRun(extra: Record<string, unknown> = {}, content = 'hello archive') {
  const created = await api.createRun('assistant', content, extra);
  const stream = await api.stream(`/v1/runs/${created.runId}/events`, { timeoutMs: 30_000 });
  expect(stream.status).toBe(200);
  return { ...created, live: eventsOf(stream) };
}

/** Every read a client makes of a run and its thread, as bodies and statuses. */
async function reads(runId: string, threadId: string) {
  const [run, replay, tail, list, page1, thread, threadRuns] = await Promise.all([
    api.get(`/v1/runs/${runId}`),
    api.stream(`/v1/runs/${runId}/events`, { timeoutMs: 15_000 }),
    api.stream(`/v1/runs/${runId}/events`, {
      timeoutMs: 15_000,
      headers: { 'last-event-id': '3' },
    }),
    api.get(`/v1/runs?thread=${threadId}&limit=50`),
    api.get(`/v1/runs?limit=1`),
    api.get(`/v1/threads/${threadId}`),
    api.get(`/v1/threads/${threadId}/runs`),
  ]);
  return {
    run: [run.status, run.body],
    replay: [replay.status, replay.messages.map((m) => [m.lastEventId, m.type, m.data])],
    tail: [tail.status, tail.messages.map((m) => [m.lastEventId, m.type, m.data])],
    list: [list.status, list.body],
    page1: [page1.status, page1.body],
    thread: [thread.status, thread.body],
    threadRuns: [threadRuns.status, threadRuns.body],
  };
}

function forgottenByRedis(runId: string, threadId: string): Promise<void> {
  return stack.forgotten('tenant-a', threadId, [runId]);
}

describe('archive read-through (PostgreSQL)', () => {
  it('a run reads the same before and after Redis let it go; another tenant gets 404 both times', async () => {
    const { runId, threadId, live } = await finishedRun();
    expect(live.at(-1)?.type).toBe('run.finished');
    const hot = await reads(runId, threadId);
    expect(hot.run[0]).toBe(200);
    expect(hot.replay[1]).toHaveLength(live.length);
    const hidden = await Promise.all([
      other.get(`/v1/runs/${runId}`),
      other.get(`/v1/threads/${threadId}`),
    ]);
    await forgottenByRedis(runId, threadId);
    expect(await c.h.client.archive!.lastSeq('tenant-a', runId)).toBe(live.length);
    const cold = await reads(runId, threadId);
    expect(cold).toEqual(hot);
    const hiddenCold = await Promise.all([
      other.get(`/v1/runs/${runId}`),
      other.get(`/v1/threads/${threadId}`),
    ]);
    expect(hiddenCold.map((r): unknown => [r.status, r.body])).toEqual(
      hidden.map((r): unknown => [r.status, r.body]),
    );
    expect(hidden.map((r) => r.status)).toEqual([404, 404]);
    const events = await other.stream(`/v1/runs/${runId}/events`, { timeoutMs: 5_000 });
    expect(events.status).toBe(404);
  });

  it('lists page through hot and archived runs alike, each run once', async () => {
    const first = await finishedRun();
    await forgottenByRedis(first.runId, first.threadId);
    const second = await finishedRun({ threadId: first.threadId });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${cursor}` : '';
      const page = await api.get<RunsPage>(`/v1/threads/${first.threadId}/runs?limit=1${q}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.runs.map((r) => r.runId));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([second.runId, first.runId]);
  });

  it("a forgotten thread's next runs keep the multitask rules: enqueued turns follow each other", async () => {
    const first = await finishedRun({}, 'turn one');
    await forgottenByRedis(first.runId, first.threadId);
    const enqueue = { threadId: first.threadId, options: { multitask: 'enqueue' } };
    const [a, b] = await Promise.all([
      api.createRun('assistant', 'turn two', enqueue),
      api.createRun('assistant', 'turn three', enqueue),
    ]);
    for (const { runId } of [a, b]) {
      const s = await api.stream(`/v1/runs/${runId}/events`, { timeoutMs: 30_000 });
      expect(eventsOf(s).at(-1)?.type).toBe('run.finished');
    }
    const thread = await api.get<ThreadBody>(`/v1/threads/${first.threadId}`);
    const contents = contentsOf(thread.body);
    // One conversation, each turn after the one before it, the archived turn first.
    expect(contents[0]).toBe('turn one');
    const two = contents.indexOf('turn two');
    const three = contents.indexOf('turn three');
    expect(two).toBeGreaterThan(0);
    expect(three).toBeGreaterThan(0);
    expect(contents.filter((c) => c === 'turn one')).toHaveLength(1);
    expect(thread.body.runIds[0]).toBe(first.runId);
    expect(thread.body.runIds).toHaveLength(3);
  });

  it('a thread Redis forgot continues from the archive; deletes reach the archive for good', async () => {
    const first = await finishedRun({}, 'first turn');
    await forgottenByRedis(first.runId, first.threadId);
    const second = await finishedRun({ threadId: first.threadId }, 'second turn');
    const run = await api.get(`/v1/runs/${second.runId}`);
    expect(run.status).toBe(200);
    const thread = await api.get<ThreadBody>(`/v1/threads/${first.threadId}`);
    const contents = contentsOf(thread.body);
    // The second run started from the first one's conversation.
    expect(contents[0]).toBe('first turn');
    expect(contents).toContain('second turn');
    expect(thread.body.runIds).toEqual([first.runId, second.runId]);

    await forgottenByRedis(second.runId, first.threadId);
    expect((await api.request('DELETE', `/v1/runs/${first.runId}`)).status).toBe(204);
    expect((await api.get(`/v1/runs/${first.runId}`)).status).toBe(404);
    const after = await api.get<ThreadBody>(`/v1/threads/${first.threadId}`);
    expect(contentsOf(after.body)).not.toContain('first turn');
    expect(after.body.runIds).toEqual([second.runId]);

    expect((await api.request('DELETE', `/v1/threads/${first.threadId}`)).status).toBe(200);
    expect((await api.get<ThreadBody>(`/v1/threads/${first.threadId}`)).status).toBe(404);
    expect((await api.get(`/v1/runs/${second.runId}`)).status).toBe(404);
    // A new run on the deleted thread starts from nothing.
    const third = await finishedRun({ threadId: first.threadId }, 'third turn');
    const fresh = await api.get<ThreadBody>(`/v1/threads/${first.threadId}`);
    expect(fresh.body.runIds).toEqual([third.runId]);
    expect(contentsOf(fresh.body)).not.toContain('second turn');
  });
});
