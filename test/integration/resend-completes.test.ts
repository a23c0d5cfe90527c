/**
 * A request whose durable write applied and whose follow-up (the run's job, its admission) then
 * failed answers with an error; the client's resend must complete the follow-up, and nothing may
 * be duplicated. Here the follow-up fails once on purpose (the queues' enqueueStep rejects, as a
 * Redis command timing out on a busy API would): the resend drives the run to its end with no
 * reconciler to rescue it (RECONCILER=0, as in the benches), and records nothing twice.
 */
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { RunIndex, ScheduleFirer, type BatonQueues } from '@baton/runtime/internal';
import type {
  Checkpoint,
  CreateRunResponse,
  RunEvent,
  ScheduleDetail,
  SchedulePage,
} from '@baton/protocol';
import { idempotentRunIds } from '@baton/api';
import { startChildStack, finalAnswer, type ChildStack } from '@baton/testing/child-stack';
import { stopAllWorkerProcesses } from '@baton/testing/worker-process';

const TENANT = 'tree';
let s: ChildStack;

beforeAll(async () => {
  s = await startChildStack(inject('redisUrl'));
  await s.spawn({ env: { RECONCILER: '0' } });
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await s.stop();
});

/** The queues behind the API's run service (the one the HTTP routes use). */
function apiQueues(): BatonQueues {
  return s.api.api.runtime.queues;
}

/** Runs `work` with the API's next step enqueue failing as a timed-out Redis command does. */
async function withEnqueueFailingOnce<T>(work: () => Promise<T>): Promise<T> {
  const spy = vi
    .spyOn(apiQueues(), 'enqueueStep')
    .mockRejectedValueOnce(new Error('Command timed out'));
  try {
    return await work();
  } finally {
    spy.mockRestore();
  }
}

function applied(events: readonly RunEvent[], decisionId: string): number {
  return events.filter((e) => e.type === 'decision.applied' && e.decision.decisionId === decisionId)
    .length;
}

function suspendedCall(cp: Checkpoint): string | undefined {
  return Object.values(cp.calls).find((c) => c.status === 'suspended')?.id;
}

describe('a decision resent after its commit applied and its scheduling failed', () => {
  it('schedules the run: it finishes, the decision recorded and applied once', async () => {
    const service = s.api.api.context.service;
    const { runId } = await service.createRun(TENANT, {
      agent: 'child-approval',
      input: { messages: [{ role: 'user', content: 'approve?' }] },
    });
    const cp = await s.waitFor(runId, (c) => suspendedCall(c) !== undefined, 'to wait');
    const decision = { toolCallId: suspendedCall(cp)!, action: 'resume' as const };
    const sent = [{ ...decision, decisionId: 'own-1' }];
    await expect(
      withEnqueueFailingOnce(() => service.submitDecisions(TENANT, runId, sent)),
    ).rejects.toThrow('Command timed out');
    const again = await service.submitDecisions(TENANT, runId, sent);
    expect({ accepted: again.accepted, duplicates: again.duplicates }).toEqual({
      accepted: [],
      duplicates: ['own-1'],
    });
    const done = await s.waitDone(runId);
    expect(done.decisionLog.filter((d) => d.decisionId === 'own-1')).toHaveLength(1);
    expect(applied(await s.events(runId), 'own-1')).toBe(1);
  });

  it("sent to the parent for its child's call (routed): the child is scheduled, the tree ends", async () => {
    const service = s.api.api.context.service;
    const { runId } = await service.createRun(TENANT, {
      agent: 'tree-sequential',
      input: { messages: [{ role: 'user', content: 'call approval' }] },
    });
    const parent = await s.waitFor(
      runId,
      (cp) => Object.values(cp.calls).some((c) => c.child !== undefined),
      'to start its child',
    );
    const childId = Object.values(parent.calls).find((c) => c.child)!.child!.runId;
    const child = await s.waitFor(childId, (c) => suspendedCall(c) !== undefined, 'to wait');
    const sent = [
      { toolCallId: suspendedCall(child)!, action: 'resume' as const, decisionId: 'r-1' },
    ];
    await expect(
      withEnqueueFailingOnce(() => service.submitDecisions(TENANT, runId, sent)),
    ).rejects.toThrow('Command timed out');
    const again = await service.submitDecisions(TENANT, runId, sent);
    expect(again.routed).toEqual([{ runId: childId, accepted: [], duplicates: ['r-1'] }]);
    const done = await s.waitDone(runId);
    expect(finalAnswer(done)).toBe('results: approval="child approved and done"');
    expect(applied(await s.events(childId), 'r-1')).toBe(1);
  });
});

/** The tenant's runs whose input is `content` (each test uses its own). */
async function runsWithInput(content: string): Promise<Checkpoint[]> {
  const page = await s.rt.store.listRuns({ tenantId: TENANT, cursor: null, limit: 1000 });
  const out: Checkpoint[] = [];
  for (const run of page.runs) {
    const cp = await s.load(run.runId);
    if (cp?.messages.some((m) => m.role === 'user' && m.content === content)) out.push(cp);
  }
  return out;
}

describe('a run create that failed after the run was created', () => {
  it('resent with the same Idempotency-Key answers the same run, which finishes', async () => {
    const content = `answer once ${Date.now()}`;
    const body = { agent: 'child-answer', input: { messages: [{ role: 'user', content }] } };
    const key = { 'idempotency-key': `resend-${s.prefix}` };
    const first = await withEnqueueFailingOnce(() => s.client.post('/v1/runs', body, key));
    expect(first.status).toBeGreaterThanOrEqual(500);
    const again = await s.client.post<CreateRunResponse>('/v1/runs', body, key);
    expect(again.status).toBe(202);
    const runs = await runsWithInput(content);
    expect(runs.map((cp) => cp.identity.runId)).toEqual([again.body.runId]);
    expect((await s.waitDone(again.body.runId)).status).toBe('done');
    // Answered from the record from now on, as any replay.
    const replay = await s.client.post<CreateRunResponse>('/v1/runs', body, key);
    expect(replay.body.runId).toBe(again.body.runId);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it('without a key keeps its thread: no second run of the thread runs beside it', async () => {
    const service = s.api.api.context.service;
    const content = `hold the thread ${Date.now()}`;
    const threadId = `thread-${s.prefix}-held`;
    const request = {
      agent: 'child-answer',
      threadId,
      input: { messages: [{ role: 'user' as const, content }] },
    };
    // The start keeps failing (Redis refuses) while the thread is checked: the run holds it.
    const spy = vi
      .spyOn(apiQueues(), 'enqueueStep')
      .mockRejectedValue(new Error('Command timed out'));
    let runId: string;
    try {
      await expect(service.createRun(TENANT, request)).rejects.toThrow('Command timed out');
      const [created] = await runsWithInput(content);
      runId = created!.identity.runId;
      expect((await s.rt.threads.load(TENANT, threadId)).activeRunId).toBe(runId);
      await expect(
        service.createRun(TENANT, {
          ...request,
          input: { messages: [{ role: 'user', content: 'next' }] },
        }),
      ).rejects.toMatchObject({ code: 'thread_busy' });
    } finally {
      spy.mockRestore();
    }
    // Once Redis answers, the run whose start was lost is started with no resend and no
    // reconciler (RECONCILER=0): in the background by the API that failed to start it.
    expect((await s.waitDone(runId)).status).toBe('done');
  });

  it('with a key, whose start was lost, starts with no resend once Redis answers', async () => {
    const content = `start me ${Date.now()}`;
    const body = { agent: 'child-answer', input: { messages: [{ role: 'user', content }] } };
    const key = `unsent-${s.prefix}`;
    const first = await withEnqueueFailingOnce(() =>
      s.client.post('/v1/runs', body, { 'idempotency-key': key }),
    );
    expect(first.status).toBeGreaterThanOrEqual(500);
    const { runId } = idempotentRunIds(TENANT, key, body);
    expect((await s.waitDone(runId)).status).toBe('done');
    expect((await runsWithInput(content)).map((cp) => cp.identity.runId)).toEqual([runId]);
  });
});

/**
 * Fails one call of `obj[method]` whose arguments `match`, as a Redis command does that times
 * out: 'unsent' (it never reached Redis) or 'lost' (it applied and its reply was lost).
 */
function failOnce(
  obj: object,
  method: string,
  match: (args: unknown[]) => boolean,
  mode: 'unsent' | 'lost',
): { restore: () => void; fired: () => boolean } {
  const target = obj as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = target[method]!.bind(obj);
  let fired = false;
  const spy = vi.spyOn(target, method).mockImplementation(async (...args: unknown[]) => {
    if (fired || !match(args)) return original(...args);
    fired = true;
    if (mode === 'lost') await original(...args);
    throw new Error('Command timed out');
  });
  return { restore: () => spy.mockRestore(), fired: () => fired };
}

describe('a keyed run create that failed at any one of its writes, resent', () => {
  const runtime = () => s.api.api.runtime;
  /** Each write of the create path, in order, and how its failure is injected. */
  const faults: [string, (runId: string) => ReturnType<typeof failOnce>][] = [
    [
      "the run's entry in the active index (before the run)",
      // This run's entry only: other runs' steps move through the same index meanwhile.
      (runId) =>
        failOnce(
          runtime().redis,
          'zadd',
          (a) => a[0] === runtime().keys.activeRuns && a[2] === runId,
          'unsent',
        ),
    ],
    [
      'the thread acquire (applied, reply lost)',
      () => failOnce(runtime().threads, 'acquire', () => true, 'lost'),
    ],
    ['the run write (never sent)', () => failOnce(runtime().store, 'create', () => true, 'unsent')],
    [
      'the run write (applied, reply lost)',
      () => failOnce(runtime().store, 'create', () => true, 'lost'),
    ],
    [
      "the run's fairness fields (after the run)",
      (runId) =>
        failOnce(
          runtime().store,
          'setIfRecorded',
          (a) => (a[0] as string[])[0] === runtime().keys.run(runId).cp,
          'unsent',
        ),
    ],
    [
      "the tenant's run index (after the run)",
      // This run's entry only: an earlier case's run, still healing in the background on a
      // loaded machine, writes the same index (the fault fired on it, and this create got 202).
      (runId) =>
        failOnce(
          runtime().redis,
          'zadd',
          (a) => a[0] === runtime().keys.tenantRuns(TENANT) && a[2] === runId,
          'unsent',
        ),
    ],
    [
      "the run's start",
      (runId) =>
        failOnce(
          apiQueues(),
          'enqueueStep',
          (a) => (a[0] as { runId?: string } | undefined)?.runId === runId,
          'unsent',
        ),
    ],
  ];

  it.each(faults)(
    'after %s: the resend answers the run, listed, started, run once',
    async (what, inject) => {
      const content = `heal ${what} ${Date.now()}`;
      const body = {
        agent: 'child-answer',
        input: { messages: [{ role: 'user', content }] },
        options: { fairnessKey: 'user-1' },
      };
      const key = `fault-${s.prefix}-${faults.findIndex(([w]) => w === what)}`;
      const headers = { 'idempotency-key': key };
      const { runId } = idempotentRunIds(TENANT, key, body);
      const fault = inject(runId);
      let first;
      try {
        first = await s.client.post('/v1/runs', body, headers);
      } finally {
        fault.restore();
      }
      expect(fault.fired()).toBe(true);
      expect(first.status).toBeGreaterThanOrEqual(500);
      const again = await s.client.post<CreateRunResponse>('/v1/runs', body, headers);
      expect(again.status).toBe(202);
      expect(again.body.runId).toBe(runId);
      expect((await s.waitDone(runId)).status).toBe('done');
      // Listed (GET /v1/runs reads the tenant's index), with its fairness key, and one run only.
      const listed = await s.client.get<{ runs: { runId: string; fairnessKey?: string }[] }>(
        '/v1/runs?fairnessKey=user-1&limit=100',
      );
      expect(listed.body.runs.filter((r) => r.runId === runId)).toHaveLength(1);
      expect((await runsWithInput(content)).map((cp) => cp.identity.runId)).toEqual([runId]);
      expect(await s.rt.redis.hget(s.rt.keys.run(runId).cp, 'fkey')).toBe('user-1');
      const finished = (await s.events(runId)).filter((e) => e.type === 'run.finished');
      expect(finished).toHaveLength(1);
    },
  );
});

describe('a schedule firing delivered again after its run was created and its start failed', () => {
  it('starts the run it finds (no second run): it finishes', async () => {
    const created = await s.client.post<ScheduleDetail>('/v1/schedules', {
      agent: 'child-answer',
      cron: '0 0 1 1 *',
      input: { messages: [{ role: 'user', content: 'once a year' }] },
    });
    expect(created.status).toBe(201);
    const { scheduleId } = created.body;
    const { runtime } = s.api.api;
    const { schedules } = s.api.api.context;
    const firer = new ScheduleFirer(runtime, schedules);
    const at = Math.floor(Date.now() / 1000) * 1000;
    await expect(withEnqueueFailingOnce(() => firer.fire(TENANT, scheduleId, at))).rejects.toThrow(
      'Command timed out',
    );
    const again = await firer.fire(TENANT, scheduleId, at);
    expect(again).toMatchObject({ kind: 'fired', firing: { outcome: 'created' } });
    const runId = `${scheduleId}.${at}`;
    expect((await s.waitDone(runId)).status).toBe('done');
    const runs = await s.client.get<{ runs: { runId: string }[] }>(
      `/v1/schedules/${scheduleId}/runs`,
    );
    expect(runs.body.runs.map((r) => r.runId)).toEqual([runId]);
    await s.client.request('DELETE', `/v1/schedules/${scheduleId}`);
  });
});

describe('a schedule firing delivered again after its create failed before the run existed', () => {
  it('creates the run (the first delivery left nothing that blocks it): it finishes', async () => {
    const created = await s.client.post<ScheduleDetail>('/v1/schedules', {
      agent: 'child-answer',
      cron: '0 0 1 1 *',
      input: { messages: [{ role: 'user', content: 'once a year, again' }] },
    });
    expect(created.status).toBe(201);
    const { scheduleId } = created.body;
    const { runtime } = s.api.api;
    const { schedules } = s.api.api.context;
    const firer = new ScheduleFirer(runtime, schedules);
    const at = Math.floor(Date.now() / 1000) * 1000;
    const fault = failOnce(runtime.store, 'create', () => true, 'unsent');
    try {
      await expect(firer.fire(TENANT, scheduleId, at)).rejects.toThrow('Command timed out');
    } finally {
      fault.restore();
    }
    const again = await firer.fire(TENANT, scheduleId, at);
    expect(again).toMatchObject({ kind: 'fired', firing: { outcome: 'created' } });
    const runId = `${scheduleId}.${at}`;
    expect((await s.waitDone(runId)).status).toBe('done');
    await s.client.request('DELETE', `/v1/schedules/${scheduleId}`);
  });
});

describe('a schedule create that failed after the schedule was created', () => {
  it('resent with the same Idempotency-Key answers the same schedule (no second one)', async () => {
    const { schedules } = s.api.api.context;
    const name = `resent ${s.prefix}`;
    const body = {
      name,
      agent: 'child-answer',
      cron: '0 0 1 1 *',
      input: { messages: [{ role: 'user', content: 'once a year' }] },
    };
    const key = { 'idempotency-key': `schedule-${s.prefix}` };
    const spy = vi.spyOn(schedules, 'get').mockRejectedValueOnce(new Error('Command timed out'));
    let first;
    try {
      first = await s.client.post('/v1/schedules', body, key);
    } finally {
      spy.mockRestore();
    }
    expect(first.status).toBeGreaterThanOrEqual(500);
    const again = await s.client.post<ScheduleDetail>('/v1/schedules', body, key);
    expect(again.status).toBe(201);
    const page = await s.client.get<SchedulePage>('/v1/schedules?limit=100');
    const named = page.body.schedules.filter((x) => x.name === name);
    expect(named.map((x) => x.scheduleId)).toEqual([again.body.scheduleId]);
    expect(again.body.nextFireAt).toEqual(expect.any(Number));
    await s.client.request('DELETE', `/v1/schedules/${again.body.scheduleId}`);
  });
});

describe('a delete that failed part way, resent', () => {
  const runtime = () => s.api.api.runtime;

  /** A finished run of `threadId` (created through the service, as the API does). */
  async function finishedOn(threadId: string, content: string): Promise<string> {
    const { runId } = await s.api.api.context.service.createRun(TENANT, {
      agent: 'child-answer',
      threadId,
      input: { messages: [{ role: 'user', content }] },
    });
    await s.waitDone(runId);
    // Its thread released (the worker does it right after the final commit).
    await expect
      .poll(async () => (await s.rt.threads.load(TENANT, threadId)).activeRunId, {
        timeout: 10_000,
      })
      .toBeNull();
    return runId;
  }

  async function listedOn(threadId: string): Promise<string[]> {
    const page = await s.client.get<{ runs: { runId: string }[] }>(
      `/v1/runs?thread=${threadId}&limit=100`,
    );
    return page.body.runs.map((r) => r.runId);
  }

  it('DELETE /v1/threads/:id failing at its second run: the resend deletes what is left', async () => {
    const threadId = `thread-${s.prefix}-deleted`;
    const first = await finishedOn(threadId, 'first turn');
    const second = await finishedOn(threadId, 'second turn');
    let calls = 0;
    const fault = failOnce(runtime().store, 'deleteRun', () => (calls += 1) === 2, 'unsent');
    let cut;
    try {
      cut = await s.client.request('DELETE', `/v1/threads/${threadId}`);
    } finally {
      fault.restore();
    }
    expect(fault.fired()).toBe(true);
    expect(cut.status).toBeGreaterThanOrEqual(500);
    const again = await s.client.request('DELETE', `/v1/threads/${threadId}`);
    expect(again.status).toBe(200);
    expect(await listedOn(threadId)).toEqual([]);
    expect(await s.load(first)).toBeNull();
    expect(await s.load(second)).toBeNull();
  });

  it('DELETE /v1/runs/:id failing after its thread let it go: the resend deletes the run (204)', async () => {
    const threadId = `thread-${s.prefix}-run-deleted`;
    const runId = await finishedOn(threadId, 'only turn');
    // Its entry in the expiring-runs index, the last step before its keys go.
    const fault = failOnce(RunIndex.prototype, 'forgetExpiring', () => true, 'unsent');
    let cut;
    try {
      cut = await s.client.request('DELETE', `/v1/runs/${runId}`);
    } finally {
      fault.restore();
    }
    expect(cut.status).toBeGreaterThanOrEqual(500);
    expect((await s.client.request('DELETE', `/v1/runs/${runId}`)).status).toBe(204);
    expect(await s.load(runId)).toBeNull();
    expect(await listedOn(threadId)).toEqual([]);
  });
});
