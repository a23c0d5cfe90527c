/**
 * A delete removes the data it says it removes; nothing comes back. DELETE /v1/runs/:id used to
 * answer 204 while the thread's history kept the run's messages (7 days), so the next run on the
 * same threadId showed them again in GET /v1/threads/:id and gave them to the model. Now the
 * run's messages leave the thread, and a thread whose only run was deleted is deleted whole.
 * A worker and the HTTP API (in-process), on a private Redis; the model records what it is given.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { ScriptedModel, type AgentDefinition } from '@baton/core';
import type { Message, ThreadResponse } from '@baton/protocol';
import { ApiClient } from '@baton/testing/api-harness';
import {
  silentLogger,
  startHarness,
  waitForStatus,
  type Harness,
} from '@baton/testing/worker-harness';

const KEY = 'delete-forgets-key-123';
const TENANT = 'forget';

/** Every prompt the model was given, in order. */
const prompts: Message[][] = [];

const recorder: AgentDefinition = {
  name: 'recorder',
  description: 'answers with a fixed text and remembers every prompt',
  model: new ScriptedModel((request) => {
    prompts.push([...request.messages]);
    return { text: 'noted' };
  }),
  tools: [],
};

let h: Harness;
let api: RunningApi;
let a: ApiClient;

beforeAll(async () => {
  h = await startHarness(inject('redisUrl'), [recorder]);
  const config = loadApiConfig({
    REDIS_URL: h.config.REDIS_URL,
    BATON_PREFIX: h.prefix,
    API_KEYS: `${TENANT}:${KEY}`,
    LOG_LEVEL: 'silent',
  });
  api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  a = new ApiClient(api.url, KEY);
});

afterAll(async () => {
  await api?.close();
  await h?.stop();
});

async function runOn(threadId: string, content: string): Promise<string> {
  const r = await a.post<{ runId: string }>('/v1/runs', {
    agent: 'recorder',
    threadId,
    input: { messages: [{ role: 'user', content }] },
  });
  expect(r.status).toBe(202);
  await waitForStatus(h, r.body.runId, ['done'], 30_000);
  return r.body.runId;
}

/** What the model was given in the last prompt, as text. */
function lastPrompt(): string {
  return JSON.stringify(prompts.at(-1));
}

/** Every key (Baton's) and every member of the shared run indexes that names one of `ids`. */
async function traces(ids: readonly string[]): Promise<string[]> {
  const redis = h.client.redis;
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${h.prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      if (ids.some((id) => key.includes(id))) found.push(key);
      const type = await redis.type(key);
      const members =
        type === 'zset'
          ? await redis.zrange(key, '0', '-1')
          : type === 'hash'
            ? await redis.hkeys(key)
            : [];
      for (const m of members)
        if (ids.some((id) => m.includes(id))) found.push(`${key} member ${m}`);
    }
  } while (cursor !== '0');
  return found;
}

describe('deleting a run or a thread', () => {
  it("a thread's only run deleted: the thread is gone, a new run on the same threadId starts empty", async () => {
    const runId = await runOn('th-single', 'my secret is 4711');
    expect((await a.get<ThreadResponse>('/v1/threads/th-single')).body.messages).toHaveLength(2);

    expect((await a.request('DELETE', `/v1/runs/${runId}`)).status).toBe(204);
    expect((await a.get(`/v1/runs/${runId}`)).status).toBe(404);
    expect((await a.get('/v1/threads/th-single')).status).toBe(404);
    expect(await traces([runId, 'th-single'])).toEqual([]);

    await runOn('th-single', 'what was my secret?');
    expect(lastPrompt()).not.toContain('4711');
    const thread = await a.get<ThreadResponse>('/v1/threads/th-single');
    expect(thread.status).toBe(200);
    expect(JSON.stringify(thread.body)).not.toContain('4711');
    expect(thread.body.messages.map((m) => m.content)).toEqual(['what was my secret?', 'noted']);
  });

  it("one run of several deleted: its messages leave the thread's history, the others stay", async () => {
    await runOn('th-multi', 'first turn');
    const middle = await runOn('th-multi', 'my secret is 1234');
    await runOn('th-multi', 'third turn');
    expect((await a.get<ThreadResponse>('/v1/threads/th-multi')).body.messages).toHaveLength(6);

    expect((await a.request('DELETE', `/v1/runs/${middle}`)).status).toBe(204);
    const thread = await a.get<ThreadResponse>('/v1/threads/th-multi');
    expect(thread.body.messages.map((m) => m.content)).toEqual([
      'first turn',
      'noted',
      'third turn',
      'noted',
    ]);
    expect(thread.body.runIds).not.toContain(middle);
    expect(await traces([middle])).toEqual([]);

    await runOn('th-multi', 'fourth turn');
    expect(lastPrompt()).not.toContain('1234');
    expect(
      prompts
        .at(-1)!
        .filter((m) => m.role === 'user')
        .map((m) => m.content),
    ).toEqual(['first turn', 'third turn', 'fourth turn']);
    // Deleting the same run again: 404, and nothing changes.
    expect((await a.request('DELETE', `/v1/runs/${middle}`)).status).toBe(404);
    expect((await a.get<ThreadResponse>('/v1/threads/th-multi')).body.messages).toHaveLength(6);
  });

  it('DELETE /v1/threads/:id leaves no key and no index entry behind', async () => {
    const runs = [await runOn('th-whole', 'one'), await runOn('th-whole', 'two')];
    const deleted = await a.request('DELETE', '/v1/threads/th-whole');
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ threadId: 'th-whole', deletedRuns: 2 });
    expect(await traces([...runs, 'th-whole'])).toEqual([]);
    await runOn('th-whole', 'three');
    expect(lastPrompt()).not.toMatch(/"one"|"two"/);
  });
});
