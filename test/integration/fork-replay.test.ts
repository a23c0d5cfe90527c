/**
 * Fork and replay through the HTTP API, on in-process workers and a real Redis: a fork's log
 * opens with the original's events (same bodies), it continues from that state without running
 * a settled call again, the original is untouched, and a cancelled run replays as a new run.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RunEvent, RunView } from '@baton/protocol';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { waitFor, waitForStatus } from '@baton/testing/worker-harness';
import { ToolProbe, bodyJson, callsSettledBy, forkAgents } from '@baton/testing/fork-agents';
import { runCli } from '@baton/testing/cli';

const probe = new ToolProbe();
let c: ApiCluster;
let a: ApiClient;

beforeAll(async () => {
  c = await startApiCluster(inject('redisUrl'), forkAgents(probe));
  a = new ApiClient(c.apis[0]!.url, KEYS.a);
});

afterAll(async () => {
  await c.stop();
});

/** The run's log as the API reads it (Redis, or the archive once Redis let it go). */
function events(runId: string): Promise<RunEvent[]> {
  return c.h.client.service.events('tenant-a', runId);
}

async function approve(runId: string): Promise<void> {
  const r = await a.post(`/v1/runs/${runId}/decisions`, {
    decisions: [{ toolCallId: 'C', action: 'resume' }],
  });
  expect(r.status).toBe(202);
}

/** A run of `agent` that waited for C's approval, was approved and finished. */
async function finishedRun(agent: string): Promise<{ runId: string; log: RunEvent[] }> {
  const { runId } = await a.createRun(agent, 'go');
  await waitForStatus(c.h, runId, ['waiting']);
  await approve(runId);
  await waitForStatus(c.h, runId, ['done']);
  return { runId, log: await events(runId) };
}

describe('POST /v1/runs/:id/fork', () => {
  it('forks at a suspension: same prefix, waits for its own decision, runs no settled call again', async () => {
    const { runId, log } = await finishedRun('fork-parallel');
    const suspended = log.find((e) => e.type === 'tool_call.suspended');
    const atSeq = suspended!.seq;
    const r = await a.post<{ runId: string; threadId: string; origin: unknown }>(
      `/v1/runs/${runId}/fork`,
      { atSeq },
    );
    expect(r.status).toBe(202);
    const fork = r.body.runId;
    expect(r.body.origin).toMatchObject({ kind: 'fork', runId, atSeq });
    await waitForStatus(c.h, fork, ['waiting']);
    const forkLog = await events(fork);
    expect(forkLog.slice(0, atSeq).map(bodyJson)).toEqual(log.slice(0, atSeq).map(bodyJson));
    expect(forkLog.every((e) => e.runId === fork && e.threadId === r.body.threadId)).toBe(true);
    await approve(fork);
    await waitForStatus(c.h, fork, ['done']);
    for (const id of callsSettledBy(log, atSeq))
      expect({ id, n: probe.count(fork, id) }).toEqual({ id, n: 0 });
    // C's approval came after atSeq: the fork ran it once, on its own decision.
    expect(probe.count(fork, 'C')).toBe(1);
    const view = await a.get<RunView>(`/v1/runs/${fork}`);
    expect(view.body.origin).toMatchObject({ kind: 'fork', runId, atSeq });
    // The original is untouched.
    expect((await events(runId)).map(bodyJson)).toEqual(log.map(bodyJson));
  });

  it('forks at the end with new input: a new turn on a new thread branch holding the conversation', async () => {
    const { runId, log } = await finishedRun('fork-sequential');
    const r = await a.post<{ runId: string; threadId: string }>(`/v1/runs/${runId}/fork`, {
      atSeq: log.length,
      input: { messages: [{ role: 'user', content: 'once more' }] },
    });
    expect(r.status).toBe(202);
    const done = await waitForStatus(c.h, r.body.runId, ['done']);
    expect(done.termination).toEqual({ kind: 'natural_end' });
    for (const id of ['A', 'B', 'C', 'D']) expect(probe.count(r.body.runId, id)).toBe(0);
    const thread = await a.get<{ messages: { content: unknown }[] }>(
      `/v1/threads/${r.body.threadId}`,
    );
    expect(thread.status).toBe(200);
    const contents = thread.body.messages.map((m) => m.content);
    expect(contents[0]).toBe('go');
    expect(contents).toContain('once more');
  });

  it('refuses a seq outside the log (422), input inside a step (422), another tenant (404)', async () => {
    const { runId, log } = await finishedRun('fork-parallel');
    const outside = await a.post<{ error: { code: string; message: string } }>(
      `/v1/runs/${runId}/fork`,
      { atSeq: log.length + 1 },
    );
    expect(outside.status).toBe(422);
    expect(outside.body.error.code).toBe('fork_point_invalid');
    expect(outside.body.error.message).toContain(String(log.length));
    const created = log.find((e) => e.type === 'tool_call.created')!.seq;
    const mid = await a.post<{ error: { code: string } }>(`/v1/runs/${runId}/fork`, {
      atSeq: created,
      input: { messages: [{ role: 'user', content: 'x' }] },
    });
    expect(mid.status).toBe(422);
    const other = await a.withKey(KEYS.b).post(`/v1/runs/${runId}/fork`, { atSeq: created });
    expect(other.status).toBe(404);
    const bad = await a.post(`/v1/runs/${runId}/fork`, { atSeq: 'x' });
    expect(bad.status).toBe(400);
  });
});

describe('POST /v1/runs/:id/replay', () => {
  it('replays a cancelled run as a new run that keeps its settled calls, and refuses a finished one', async () => {
    const { runId } = await a.createRun('fork-parallel', 'go');
    await waitForStatus(c.h, runId, ['waiting']);
    expect((await a.post(`/v1/runs/${runId}/cancel`)).status).toBe(202);
    await waitForStatus(c.h, runId, ['done']);
    const log = await events(runId);
    const r = await a.post<{ runId: string; origin: { kind: string; atSeq: number } }>(
      `/v1/runs/${runId}/replay`,
    );
    expect(r.status).toBe(202);
    expect(r.body.origin.kind).toBe('replay');
    const replay = r.body.runId;
    // A and B had settled before the cancel: the replay waits for C again, without them.
    await waitForStatus(c.h, replay, ['waiting']);
    await approve(replay);
    await waitForStatus(c.h, replay, ['done']);
    for (const id of callsSettledBy(log, r.body.origin.atSeq))
      expect(probe.count(replay, id)).toBe(0);
    expect(probe.count(replay, 'A')).toBe(0);
    expect(probe.count(replay, 'C')).toBe(1);
    expect(probe.count(replay, 'D')).toBe(1);
    const again = await a.post<{ error: { code: string } }>(`/v1/runs/${replay}/replay`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('run_not_replayable');
  });
});

describe('POST /v1/runs/replay (bulk)', () => {
  it('replays the cancelled runs the filter selects, with progress, and no others', async () => {
    const since = Date.now();
    const cancelled: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const { runId } = await a.createRun('fork-sequential', `bulk ${String(i)}`);
      await waitForStatus(c.h, runId, ['waiting']);
      await a.post(`/v1/runs/${runId}/cancel`);
      await waitForStatus(c.h, runId, ['done']);
      cancelled.push(runId);
    }
    const { runId: finished } = await finishedRun('fork-sequential');
    const r = await a.post<{ replayId: string; total: number }>('/v1/runs/replay', {
      filter: { agent: 'fork-sequential', status: ['cancelled'], createdAfter: since },
    });
    expect(r.status).toBe(202);
    expect(r.body.total).toBe(3);
    const done = await waitFor(
      async () => {
        const p = await a.get<{
          state: string;
          processed: number;
          replays: Record<string, string>;
          replayed: number;
        }>(`/v1/replays/${r.body.replayId}`);
        expect(p.status).toBe(200);
        return p.body.state === 'done' ? p.body : null;
      },
      15_000,
      'the bulk replay',
    );
    expect(done.replayed).toBe(3);
    expect(Object.keys(done.replays).sort()).toEqual([...cancelled].sort());
    expect(done.replays[finished]).toBeUndefined();
    for (const replay of Object.values(done.replays)) {
      const view = await a.get<RunView>(`/v1/runs/${replay}`);
      expect(view.body.origin?.kind).toBe('replay');
    }
    expect((await a.withKey(KEYS.b).get(`/v1/replays/${r.body.replayId}`)).status).toBe(404);
    const bad = await a.post('/v1/runs/replay', { filter: { status: ['done'] } });
    expect(bad.status).toBe(400);
  });
});

describe('baton runs fork|replay', () => {
  it('forks through the CLI, says why a finished run cannot be replayed (exit 5), replays in bulk', async () => {
    const { runId, log } = await finishedRun('fork-parallel');
    const env = { BATON_URL: c.apis[0]!.url, BATON_API_KEY: KEYS.a };
    const atSeq = log.find((e) => e.type === 'step.finished')!.seq;
    const forked = await runCli(['runs', 'fork', runId, '--at', String(atSeq), '--json'], env);
    expect(forked.code).toBe(0);
    const body = JSON.parse(forked.stdout) as { runId: string; origin: { atSeq: number } };
    expect(body.origin.atSeq).toBe(atSeq);
    await waitForStatus(c.h, body.runId, ['done']);
    expect(probe.count(body.runId, 'A')).toBe(0);
    expect(probe.count(body.runId, 'D')).toBe(1);
    const refused = await runCli(['runs', 'replay', runId], env);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain('only a failed or cancelled run can be replayed');
    const since = Date.now();
    const { runId: cancelled } = await a.createRun('fork-parallel', 'to cancel');
    await waitForStatus(c.h, cancelled, ['waiting']);
    await a.post(`/v1/runs/${cancelled}/cancel`);
    await waitForStatus(c.h, cancelled, ['done']);
    const bulk = await runCli(
      ['runs', 'replay-many', '--agent', 'fork-parallel', '--status', 'cancelled'].concat([
        '--created-after',
        String(since),
        '--wait',
        '--json',
      ]),
      env,
    );
    expect(bulk.code, bulk.stderr).toBe(0);
    const progress = JSON.parse(bulk.stdout) as { state: string; replays: Record<string, string> };
    expect(progress.state).toBe('done');
    expect(Object.keys(progress.replays)).toEqual([cancelled]);
  });
});
