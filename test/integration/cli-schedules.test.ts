/**
 * `baton schedules …`, `baton webhooks` and the run tree in `baton runs get`, as real CLI
 * processes against a real API, in-process workers and a real Redis.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import {
  RunPageSchema,
  RunWebhooksResponseSchema,
  ScheduleDetailSchema,
  SchedulePageSchema,
  type RunEvent,
} from '@baton/protocol';
import { runCli } from '@baton/testing/cli';
import { waitFor } from '@baton/testing/worker-harness';
import { startWebhookStack, type WebhookStack } from '@baton/testing/webhook-stack';

const KEY = 'cli-schedules-key-123';

describe('baton schedules, webhooks and run trees', () => {
  let s: WebhookStack;
  let env: Record<string, string>;
  let client: BatonClient;
  beforeAll(async () => {
    s = await startWebhookStack(inject('redisUrl'), KEY);
    env = { BATON_URL: s.url, BATON_API_KEY: KEY };
    client = new BatonClient({ baseUrl: s.url, apiKey: KEY });
  });
  afterAll(async () => {
    await s?.stop();
  });

  async function runToEnd(runId: string): Promise<RunEvent[]> {
    const events: RunEvent[] = [];
    for await (const e of client.runs.stream(runId)) events.push(e);
    return events;
  }

  it('create, list, get, pause, resume and delete a schedule', async () => {
    const created = await runCli(
      [
        'schedules',
        'create',
        '-a',
        'assistant',
        '-m',
        'weather in Paris?',
        '--cron',
        '0 9 * * 1-5',
        '--timezone',
        'Europe/Paris',
        '--name',
        'cli-mornings',
        '--json',
      ],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const schedule = ScheduleDetailSchema.parse(JSON.parse(created.stdout));
    expect(schedule).toMatchObject({
      name: 'cli-mornings',
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      state: 'active',
    });
    const id = schedule.scheduleId;

    // The three reads are independent: started together, their start-up overlaps.
    const [list, listJson, get] = await Promise.all([
      runCli(['schedules', 'list'], env),
      runCli(['schedules', 'list', '--json'], env),
      runCli(['schedules', 'get', id], env),
    ]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(`${id} +active +assistant +cron "0 9 \\* \\* 1-5" Europe/Paris`),
    );
    const page = SchedulePageSchema.parse(JSON.parse(listJson.stdout));
    expect(page.schedules.map((x) => x.scheduleId)).toContain(id);

    expect(get.code).toBe(0);
    expect(get.stdout).toContain('message: weather in Paris?');

    const paused = await runCli(['schedules', 'pause', id], env);
    expect(paused.code).toBe(0);
    expect(paused.stdout).toContain(`${id}  paused`);
    expect((await client.schedules.get(id)).state).toBe('paused');
    const resumed = await runCli(['schedules', 'resume', id, '--json'], env);
    expect(resumed.code).toBe(0);
    expect(ScheduleDetailSchema.parse(JSON.parse(resumed.stdout)).state).toBe('active');

    const deleted = await runCli(['schedules', 'delete', id], env);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toBe(`schedule ${id} deleted\n`);
    expect((await runCli(['schedules', 'get', id], env)).code).toBe(4);
    // Six CLI processes one after another (each step needs the one before): 3-6 s each to
    // start at a load of 10-20 on 2 cores (issue 37), more than the default 30 s together.
  }, 90_000);

  it('schedules runs lists the runs a schedule created', async () => {
    const created = await runCli(
      ['schedules', 'create', '-a', 'assistant', '-m', 'weather?', '--every', '1s', '--limit', '1'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const id = /^(\S+)/.exec(created.stdout)![1]!;
    expect(created.stdout).toContain('every 1000 ms');
    const [run] = await waitFor(
      async () => {
        const { runs } = await client.schedules.runs(id);
        return runs.length > 0 ? runs : null;
      },
      20_000,
      `schedule ${id} to fire`,
    );
    const runs = await runCli(['schedules', 'runs', id], env);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toContain(run!.runId);
    const json = RunPageSchema.parse(
      JSON.parse((await runCli(['schedules', 'runs', id, '--json'], env)).stdout),
    );
    expect(json.runs.map((r) => r.runId)).toEqual([run!.runId]);
    // the run names the schedule that created it
    expect((await runCli(['runs', 'get', run!.runId], env)).stdout).toContain(
      `created by schedule ${id}`,
    );
  });

  it('refuses bad schedules with usage (2), validation (5) and not found (4) codes', async () => {
    const base = ['schedules', 'create', '-a', 'assistant', '-m', 'hi'];
    // Independent CLI processes, started together: their start-up overlaps on a loaded machine.
    const [both, noTiming, badEvery, timezoneWithEvery, badCron, pauseNone, runsNone] =
      await Promise.all([
        runCli([...base, '--cron', '* * * * *', '--every', '1m'], env),
        runCli(base, env),
        runCli([...base, '--every', 'often'], env),
        runCli([...base, '--every', '1m', '--timezone', 'UTC'], env),
        runCli([...base, '--cron', 'every day'], env),
        runCli(['schedules', 'pause', 'sch-none'], env),
        runCli(['schedules', 'runs', 'sch-none'], env),
      ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('exactly one of --cron and --every');
    expect(noTiming.code).toBe(2);
    expect(badEvery.code).toBe(2);
    expect(timezoneWithEvery.code).toBe(2);
    expect(badCron.code).toBe(5);
    expect(badCron.stderr).toContain('validation_failed');
    expect(pauseNone.code).toBe(4);
    expect(runsNone.code).toBe(4);
  });

  it("baton webhooks prints a run's delivery log", async () => {
    const { runId } = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather in Rome?' }] },
      webhook: { url: s.rx.url('/cli'), events: ['run.finished'] },
    });
    await runToEnd(runId);
    await waitFor(
      async () =>
        (await client.runs.webhooks(runId)).deliveries.some((d) => d.status === 'delivered'),
      20_000,
      `the webhook of ${runId} to be delivered`,
    );
    const text = await runCli(['webhooks', runId], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`run ${s.rx.url('/cli')}  run.finished`);
    expect(text.stdout).toMatch(/run\.finished +seq \d+ +run +delivered/);
    expect(text.stdout).toMatch(/#1 \S+ HTTP 204/);
    const json = RunWebhooksResponseSchema.parse(
      JSON.parse((await runCli(['webhooks', runId, '--json'], env)).stdout),
    );
    expect(json.deliveries).toMatchObject([{ type: 'run.finished', status: 'delivered' }]);
    const none = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'weather?' }] },
    });
    expect((await runCli(['webhooks', none.runId], env)).stdout).toBe(
      `no webhook for run ${none.runId}\n`,
    );
    expect((await runCli(['webhooks', 'no-such-run'], env)).code).toBe(4);
  });

  it("runs get shows a parent's children and the child's call it waits on; deciding it finishes both", async () => {
    const { runId } = await client.runs.create({
      agent: 'tree-sequential',
      input: { messages: [{ role: 'user', content: 'call approval' }] },
    });
    const childId = `${runId}.s1c0`;
    const view = await waitFor(
      async () => {
        const v = await client.runs.get(runId);
        return v.await?.calls.length ? v : null;
      },
      20_000,
      'the child to wait',
    );
    const call = view.await!.calls[0]!;
    const parent = await runCli(['runs', 'get', runId], env);
    expect(parent.code).toBe(0);
    expect(parent.stdout).toMatch(
      new RegExp(
        `child ${childId.replace(/\./g, '\\.')} waiting agent child-approval for approval`,
      ),
    );
    expect(parent.stdout).toContain(`in child run ${childId}`);
    expect(parent.stdout).toContain(`baton decide ${childId} ${call.toolCallId} --approve`);
    const child = await runCli(['runs', 'get', childId], env);
    expect(child.stdout).toContain(`child of ${runId}`);

    const decided = await runCli(['decide', childId, call.toolCallId, '--approve'], env);
    expect(decided.code, decided.stderr).toBe(0);
    expect((await runToEnd(runId)).at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
    expect((await client.runs.get(childId)).termination).toEqual({ kind: 'natural_end' });
  });
});
