/**
 * Issue 32 item 7: what one thread can make the system hold or read is bounded. A thread grown
 * past THREAD_MAX_MESSAGES by runs through the HTTP API: the run whose input would pass the limit
 * gets 413 thread_too_large and nothing is written; the run admitted just under it appends its
 * whole output (the thread ends over the limit, as documented); GET /v1/threads/:id answers
 * bounded pages with a cursor; each run is given only the history window, and reads only the
 * window of the thread's list from Redis (MONITOR: no LRANGE … 0 -1 of the thread, none longer
 * than the window). Item 15: the first run of a made-up and of a named thread are both turn-1.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { BatonClient } from '@baton/client';
import { ScriptedModel, defineTool, toolResult, type AgentDefinition } from '@baton/core';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { monitorCommands } from '@baton/testing/redis-monitor';
import { waitForStatus } from '@baton/testing/worker-harness';

const TENANT = 'tenant-a';

interface ThreadBody {
  readonly messages: { readonly id: string }[];
  readonly runIds: string[];
  readonly nextCursor: string | null;
}
interface ErrorReply {
  readonly error: { readonly code: string; readonly details?: unknown };
}
interface RunsBody {
  readonly runs: unknown[];
}
const MAX_MESSAGES = 38;
const WINDOW = 7;

/** The model requests of each run: the roles and ids it was given. */
const requests = new Map<string, { roles: string[]; ids: string[] }[]>();

const note = defineTool({
  name: 'note',
  description: 'notes something',
  inputSchema: z.object({}),
  execute: () => Promise.resolve(toolResult.success({ noted: true })),
});

/** Four messages a run: the input, a tool call, its result, a reply. */
const tooler: AgentDefinition = {
  name: 'tooler',
  model: new ScriptedModel((request) => {
    const list = requests.get(request.runId) ?? [];
    list.push({
      roles: request.messages.map((m) => m.role),
      ids: request.messages.map((m) => m.id),
    });
    requests.set(request.runId, list);
    return request.step === 1
      ? { text: 'noting', toolCalls: [{ name: 'note', arguments: {} }] }
      : { text: 'noted' };
  }),
  tools: [note],
};

describe('bounded threads through the API', () => {
  let cluster: ApiCluster;
  let api: ApiClient;
  const redisUrl = inject('redisUrl');

  beforeAll(async () => {
    const shared = {
      THREAD_MAX_MESSAGES: String(MAX_MESSAGES),
      THREAD_MAX_BYTES: '65536',
      THREAD_HISTORY_MAX_MESSAGES: String(WINDOW),
    };
    cluster = await startApiCluster(redisUrl, [tooler], { shared });
    api = new ApiClient(cluster.apis[0]!.url, KEYS.a);
  }, 60_000);
  afterAll(async () => {
    await cluster.stop();
  });

  async function run(threadId: string | undefined, content: string): Promise<string> {
    const created = await api.createRun('tooler', content, threadId ? { threadId } : {});
    await waitForStatus(cluster.h, created.runId, ['done'], 30_000);
    return created.runId;
  }

  it('grows a thread to its limit: 413 thread_too_large after, pages, windows, bounded reads', async () => {
    const first = await api.createRun('tooler', 'turn 1');
    const threadId = first.threadId;
    await waitForStatus(cluster.h, first.runId, ['done'], 30_000);
    const runIds = [first.runId];
    // 4 messages a run: 9 runs hold 36; the 10th is admitted (36 + its 1 input <= 38) and ends
    // the thread at 40, over the limit by its own output.
    for (let i = 2; i <= 9; i += 1) runIds.push(await run(threadId, `turn ${String(i)}`));
    const messagesKey = cluster.h.client.threads.keys.thread(TENANT, threadId).messages;
    let tenth = '';
    const commands = await monitorCommands(redisUrl, async () => {
      tenth = await run(threadId, 'turn 10');
    });
    runIds.push(tenth);
    const redis = cluster.h.client.redis;
    expect(await redis.llen(messagesKey)).toBe(40);

    // The 10th run read the thread's list only in windows: never from its start to its end, never
    // more than the window's entries (or what the run before appended, measured by the acquire).
    const key = `"${messagesKey.toLowerCase()}"`;
    const reads = commands.filter((l) => l.includes('"lrange"') && l.includes(key));
    expect(reads.length).toBeGreaterThan(0);
    for (const line of reads) {
      const [start, stop] = line
        .slice(line.indexOf(key) + key.length)
        .trim()
        .split(' ');
      const from = Number(JSON.parse(start!));
      const to = Number(JSON.parse(stop!));
      expect(line).not.toMatch(/"0" "-1"/);
      const entries = from < 0 ? to - from + 1 : to - from + 1;
      expect(entries).toBeLessThanOrEqual(WINDOW);
    }

    // Every run's model input: at most the window of history (never starting with a tool result),
    // then its input.
    for (const id of runIds.slice(1)) {
      const seen = requests.get(id)?.[0];
      expect(seen).toBeDefined();
      expect(seen!.roles.length).toBeLessThanOrEqual(WINDOW + 1);
      expect(seen!.roles[0]).not.toBe('tool');
      expect(seen!.roles.at(-1)).toBe('user');
    }
    const tenthCp = await waitForStatus(cluster.h, tenth, ['done']);
    expect(tenthCp.historyLength).toBeLessThanOrEqual(WINDOW);

    // Over the limit now: the next run is refused, and nothing of it is written.
    const listed = await api.get(`/v1/runs?thread=${threadId}&limit=100`);
    const refused = await api.post<ErrorReply>('/v1/runs', {
      agent: 'tooler',
      threadId,
      input: { messages: [{ role: 'user', content: 'turn 11' }] },
    });
    expect(refused.status).toBe(413);
    expect(refused.body.error.code).toBe('thread_too_large');
    expect(refused.body.error.details).toMatchObject({ threadId, messages: 40, maxMessages: 38 });
    expect((await api.get(`/v1/runs?thread=${threadId}&limit=100`)).body).toEqual(listed.body);
    expect(await redis.llen(messagesKey)).toBe(40);

    // Pages: the newest first, older ones by cursor; together the whole history in order.
    const whole = (await cluster.h.client.threads.load(TENANT, threadId)).messages.map((m) => m.id);
    expect(whole.length).toBe(40);
    const all = await api.get<ThreadBody>(`/v1/threads/${threadId}`);
    expect(all.status).toBe(200);
    expect(all.body.messages.length).toBe(40);
    expect(all.body.nextCursor).toBeNull();
    expect(all.body.runIds).toEqual(runIds);
    const pages: string[][] = [];
    let page = await api.get<ThreadBody>(`/v1/threads/${threadId}?limit=15`);
    pages.unshift(page.body.messages.map((m) => m.id));
    while (page.body.nextCursor !== null) {
      expect(page.body.messages.length).toBe(15);
      page = await api.get<ThreadBody>(
        `/v1/threads/${threadId}?limit=15&cursor=${encodeURIComponent(page.body.nextCursor)}`,
      );
      expect(page.status).toBe(200);
      pages.unshift(page.body.messages.map((m) => m.id));
    }
    expect(pages.map((p) => p.length)).toEqual([10, 15, 15]);
    expect(pages.flat()).toEqual(whole);
    for (const bad of [
      'nope',
      Buffer.from('m0').toString('base64url'),
      'bTE5OTk5OTk5OTk5OTk5OTk5',
    ]) {
      const r = await api.get(`/v1/threads/${threadId}?cursor=${bad}`);
      expect(r.status).toBe(400);
    }
    expect((await api.get(`/v1/threads/${threadId}?limit=1001`)).status).toBe(400);

    // @baton/client: get() is a page, history() follows the cursors to the first message
    const client = new BatonClient({ baseUrl: cluster.apis[0]!.url, apiKey: KEYS.a });
    const newest = await client.threads.get(threadId, {}, { limit: 15 });
    expect(newest.messages.map((m) => m.id)).toEqual(whole.slice(-15));
    expect(typeof newest.nextCursor).toBe('string');
    const history = await client.threads.history(threadId);
    expect(history.messages.map((m) => m.id)).toEqual(whole);
    expect(history.nextCursor).toBeNull();

    expect(tenthCp.identity.turnId).toBe('turn-10');
  }, 180_000);

  it('turn ids (item 15): the first run of a made-up thread and of a named one are both turn-1', async () => {
    const made = await api.createRun('tooler', 'hello');
    const named = await api.createRun('tooler', 'hello', { threadId: `named-${made.threadId}` });
    const madeCp = await waitForStatus(cluster.h, made.runId, ['done'], 30_000);
    const namedCp = await waitForStatus(cluster.h, named.runId, ['done'], 30_000);
    expect(madeCp.identity.turnId).toBe('turn-1');
    expect(namedCp.identity.turnId).toBe('turn-1');
    const second = await api.createRun('tooler', 'again', { threadId: made.threadId });
    expect((await waitForStatus(cluster.h, second.runId, ['done'], 30_000)).identity.turnId).toBe(
      'turn-2',
    );
  });

  it('an input over the limits alone is refused before anything is written', async () => {
    const before = await api.get<RunsBody>('/v1/runs?limit=100');
    const r = await api.post<ErrorReply>('/v1/runs', {
      agent: 'tooler',
      input: { messages: [{ role: 'user', content: 'x'.repeat(70_000) }] },
    });
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('thread_too_large');
    expect((await api.get<RunsBody>('/v1/runs?limit=100')).body.runs).toEqual(before.body.runs);
  });
});
