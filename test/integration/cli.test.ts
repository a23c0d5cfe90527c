import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import { agentTool, ScriptedModel, type AgentDefinition } from '@baton/core';
import { childAgents, createDemoAgents } from '@baton/core/testing';
import {
  AgentListSchema,
  DecisionsResponseSchema,
  RunEventSchema,
  RunPageSchema,
  type RunEvent,
} from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { spawnApi, stopAllApiProcesses } from '@baton/testing/api-process';
import { BATON_BIN, ptyCli, runCli } from '@baton/testing/cli';
import { freePort } from '@baton/testing/redis';
import { withRepoLock } from '@baton/testing/repo-lock';
import { startHarness, type Harness } from '@baton/testing/worker-harness';

const execFileAsync = promisify(execFile);
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * A three-level tree for the CLI: `grand-root` asks `grand-middle`, which asks `child-approval`
 * (from childAgents), whose call needs a person.
 */
const grandAgents: AgentDefinition[] = [
  {
    name: 'grand-root',
    model: new ScriptedModel([
      { text: 'delegating', toolCalls: [{ name: 'middle', arguments: { message: 'go' } }] },
      { text: 'root done' },
    ]),
    tools: [agentTool('grand-middle', { name: 'middle', description: 'asks its own child' })],
  },
  {
    name: 'grand-middle',
    model: new ScriptedModel([
      { text: 'asking', toolCalls: [{ name: 'approval', arguments: { message: 'deep' } }] },
      { text: 'middle done' },
    ]),
    tools: [agentTool('child-approval', { name: 'approval', description: 'asks a human' })],
  },
];

/** The call the first child run (s1c0) of a watched tree waits on. */
function child0Call(events: readonly RunEvent[]): string {
  const e = events.find((x) => x.type === 'tool_call.suspended' && x.runId.endsWith('.s1c0'));
  if (e?.type !== 'tool_call.suspended') throw new Error('no suspended call in the child run');
  return e.toolCallId;
}

/** Every stdout line is one protocol event, in order, 1..N. */
function jsonEvents(stdout: string): RunEvent[] {
  const lines = stdout.split('\n').filter((l) => l !== '');
  const events = lines.map((l) => RunEventSchema.parse(JSON.parse(l)));
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events;
}

describe('baton CLI against a real API and worker', () => {
  let c: ApiCluster;
  let env: Record<string, string>;
  let client: BatonClient;
  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), [
      ...createDemoAgents(systemClock),
      ...childAgents(),
      ...grandAgents,
    ]);
    env = { BATON_URL: c.apis[0]!.url, BATON_API_KEY: KEYS.a };
    client = new BatonClient({ baseUrl: c.apis[0]!.url, apiKey: KEYS.a });
  });
  afterAll(async () => {
    await c.stop();
  });

  it('runs create --watch in a terminal: asks y/n and the payload form, sends the approval', async () => {
    const pty = ptyCli(
      ['runs', 'create', '--agent', 'assistant', '-m', 'deploy please', '--watch'],
      env,
    );
    await pty.waitFor('Deploy "checkout" to "production"?');
    await pty.waitFor('Approve? [y/n]');
    pty.type('maybe\r');
    await pty.waitFor('answer y or n');
    await pty.waitFor('Approve? [y/n]');
    pty.type('y\r');
    await pty.waitFor('comment (string, optional)');
    pty.type('ship it\r');
    await pty.waitFor('run finished: natural_end');
    expect(await pty.exited).toBe(0);
    const screen = pty.screen();
    expect(screen).toContain('assistant Checking the weather first, then deploying.');
    expect(screen).toContain('deploy_service running → succeeded');

    const runId = /run (\S+) created/.exec(screen)![1]!;
    const events: RunEvent[] = [];
    for await (const e of client.runs.stream(runId)) events.push(e);
    const applied = events.find((e) => e.type === 'decision.applied');
    expect(applied).toMatchObject({
      decision: { action: 'resume', payload: { comment: 'ship it' } },
    });
    expect((await client.runs.get(runId)).status).toBe('done');
  });

  it('a denial through the prompt cancels the call and the run still ends', async () => {
    const pty = ptyCli(['runs', 'create', '-a', 'assistant', '-m', 'deploy now', '-w'], env);
    await pty.waitFor('Approve? [y/n]');
    pty.type('n\r');
    await pty.waitFor('run finished');
    expect(await pty.exited).toBe(0);
    expect(pty.screen()).toMatch(/decision cancel/);
    expect(pty.screen()).toMatch(/deploy_service \S+ → cancelled/);
  });

  it('--json prints one protocol event per line; --until suspended exits 12, decide and watch finish it', async () => {
    const weather = await runCli(
      ['runs', 'create', '-a', 'assistant', '-m', 'weather?', '--watch', '--json'],
      env,
    );
    expect(weather.code).toBe(0);
    const events = jsonEvents(weather.stdout);
    expect(events[0]).toMatchObject({ type: 'run.created', agent: 'assistant' });
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });

    const waiting = await runCli(
      ['runs', 'create', '-a', 'assistant', '-m', 'deploy', '-w', '--json', '--until', 'suspended'],
      env,
    );
    expect(waiting.code).toBe(12);
    const first = jsonEvents(waiting.stdout);
    expect(first.at(-1)).toMatchObject({ type: 'run.finished', status: 'waiting' });
    const runId = first[0]!.runId;
    const call = first.find((e) => e.type === 'tool_call.suspended');
    if (call?.type !== 'tool_call.suspended') throw new Error('no suspended call');

    const invalid = await runCli(
      ['decide', runId, call.toolCallId, '--approve', '--payload', '{"comment":42}'],
      env,
    );
    expect(invalid.code).toBe(5);
    expect(invalid.stderr).toContain('payload_invalid');
    const approved = await runCli(
      [
        'decide',
        runId,
        call.toolCallId,
        '--approve',
        '--payload',
        '{"comment":"from a script"}',
        '--json',
      ],
      env,
    );
    expect(approved.code).toBe(0);
    expect(DecisionsResponseSchema.parse(JSON.parse(approved.stdout))).toMatchObject({
      runId,
      accepted: [expect.any(String)],
    });

    const rest = await runCli(
      ['runs', 'watch', runId, '--json', '--after', String(first.length)],
      env,
    );
    expect(rest.code).toBe(0);
    const lines = rest.stdout
      .trim()
      .split('\n')
      .map((l) => RunEventSchema.parse(JSON.parse(l)));
    expect(lines[0]!.seq).toBe(first.length + 1);
    expect(lines.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });

    const again = await runCli(['decide', runId, call.toolCallId, '--deny'], env);
    expect(again.code).toBe(5);
    expect(again.stderr).toContain('run_done');
    // Seven CLI processes one after another: 3-6 s each to start at a load of 10-20.
  }, 90_000);

  it('--watch follows the run tree: the approval a child run waits for is prompted for and decided through the parent', async () => {
    const pty = ptyCli(
      ['runs', 'create', '-a', 'tree-sequential', '-m', 'call approval', '-w'],
      env,
    );
    await pty.waitFor('runs as child run');
    await pty.waitFor('Let the child go on?');
    await pty.waitFor('Approve? [y/n]');
    pty.type('y\r');
    await pty.waitFor('run finished: natural_end');
    expect(await pty.exited).toBe(0);
    const screen = pty.screen();
    const runId = /run (\S+) created/.exec(screen)![1]!;
    const childId = `${runId}.s1c0`;
    expect(screen).toContain(`in child run ${childId}`);
    // the child's own lines are tagged with its place in the tree
    expect(screen).toContain('[s1c0] ');
    const child = await client.runs.get(childId);
    expect(child).toMatchObject({ status: 'done', termination: { kind: 'natural_end' } });
    expect(child.toolCalls).toMatchObject([{ toolName: 'approve_me', status: 'succeeded' }]);
    expect((await client.runs.get(runId)).lastAssistantMessage).toContain(
      'child approved and done',
    );
  });

  it("a grandchild's approval is prompted for and the whole tree finishes", async () => {
    const pty = ptyCli(['runs', 'create', '-a', 'grand-root', '-m', 'go', '-w'], env);
    await pty.waitFor('Let the child go on?');
    await pty.waitFor('Approve? [y/n]');
    pty.type('y\r');
    await pty.waitFor('run finished: natural_end');
    expect(await pty.exited).toBe(0);
    const runId = /run (\S+) created/.exec(pty.screen())![1]!;
    const grandchild = `${runId}.s1c0.s1c0`;
    expect(pty.screen()).toContain(`in child run ${grandchild}`);
    expect(await client.runs.get(grandchild)).toMatchObject({
      status: 'done',
      toolCalls: [{ toolName: 'approve_me', status: 'succeeded' }],
    });
    expect(await client.runs.get(runId)).toMatchObject({
      status: 'done',
      lastAssistantMessage: 'root done',
    });
  });

  it('--until suspended returns (12) when a child run waits; runs list nests child runs, --roots hides them', async () => {
    const waiting = await runCli(
      [
        'runs',
        'create',
        '-a',
        'tree-sequential',
        '-m',
        'call approval',
        '-w',
        '--json',
        '--until',
        'suspended',
      ],
      env,
    );
    expect(waiting.code).toBe(12);
    const events = waiting.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => RunEventSchema.parse(JSON.parse(l)));
    const runId = events[0]!.runId;
    const childId = `${runId}.s1c0`;
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'waiting',
      runId: childId,
    });
    // per run, in order, exactly once
    for (const id of [runId, childId]) {
      const seqs = events.filter((e) => e.runId === id).map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }

    const table = await runCli(['runs', 'list', '--limit', '100'], env);
    expect(table.code).toBe(0);
    const lines = table.stdout.split('\n');
    const parentLine = lines.findIndex((l) => l.startsWith(`${runId} `));
    expect(parentLine).toBeGreaterThanOrEqual(0);
    expect(lines[parentLine + 1]).toMatch(
      new RegExp(`^└ ${childId.replaceAll('.', '\\.')} +waiting`),
    );
    const roots = await runCli(['runs', 'list', '--limit', '100', '--roots', '--json'], env);
    const ids = RunPageSchema.parse(JSON.parse(roots.stdout)).runs.map((r) => r.runId);
    expect(ids).toContain(runId);
    expect(ids).not.toContain(childId);

    // the hint names the run that holds the call; deciding through the root reaches it
    const hint = await runCli(['runs', 'watch', runId, '--no-input', '--until', 'suspended'], env);
    expect(hint.code).toBe(12);
    expect(hint.stdout).toContain('Let the child go on?');
    await client.runs.decide(runId, {
      runId: childId,
      toolCallId: child0Call(events),
      action: 'resume',
    });
    const rest = await runCli(['runs', 'watch', runId], env);
    expect(rest.code).toBe(0);
    expect(rest.stdout).toContain('run finished: natural_end');
  });

  it('runs create refuses --until and --no-input without --watch (usage, 2) and creates nothing', async () => {
    const before = (await client.runs.list({ agent: 'child-answer', limit: 100 })).runs.length;
    for (const flags of [['--until', 'suspended'], ['--no-input'], ['--until', 'done']]) {
      const r = await runCli(['runs', 'create', '-a', 'child-answer', '-m', 'hi', ...flags], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('with --watch');
    }
    expect((await client.runs.list({ agent: 'child-answer', limit: 100 })).runs.length).toBe(
      before,
    );
  });

  it('runs list / get / cancel and agents', async () => {
    // A run that waits for a decision is still in progress whatever the machine's load: a run
    // busy in a 1.5 s tool could finish before four CLI start-ups on a loaded machine.
    const created = await runCli(
      ['runs', 'create', '-a', 'assistant', '-m', 'deploy', '-w', '--json', '--until', 'suspended'],
      env,
    );
    expect(created.code).toBe(12);
    const runId = jsonEvents(created.stdout)[0]!.runId;
    const get = await runCli(['runs', 'get', runId], env);
    expect(get.code).toBe(0);
    expect(get.stdout).toContain(runId);
    const cancel = await runCli(['runs', 'cancel', runId], env);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toContain('cancel requested');
    const watch = await runCli(['runs', 'watch', runId], env);
    expect(watch.code).toBe(10);
    expect(watch.stdout).toContain('run finished: cancelled');

    const list = await runCli(['runs', 'list', '--status', 'done', '--limit', '50', '--json'], env);
    expect(list.code).toBe(0);
    expect(RunPageSchema.parse(JSON.parse(list.stdout)).runs.map((r) => r.runId)).toContain(runId);
    const table = await runCli(['runs', 'list'], env);
    expect(table.stdout).toContain(runId);

    const agents = await runCli(['agents'], env);
    expect(agents.code).toBe(0);
    expect(agents.stdout).toContain('deploy_service (approval)');
    const agentsJson = await runCli(['agents', '--json'], env);
    expect(AgentListSchema.parse(JSON.parse(agentsJson.stdout)).agents.map((a) => a.name)).toEqual(
      expect.arrayContaining(['assistant', 'parallel-assistant']),
    );
  });

  it('the packed package (npm pack) installs and runs on its own, outside the repository', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-cli-pack-'));
    try {
      const npm = (args: string[], cwd: string): string =>
        execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      // Locked: node-versions.test.ts packs packages/cli too, and a pack deletes dist/ at its end.
      const packed = await withRepoLock('cli-pack', () =>
        npm(['pack', '--pack-destination', dir, '--silent'], join(REPO, 'packages', 'cli')),
      );
      const tarball = packed.trim().split('\n').at(-1)!;
      writeFileSync(join(dir, 'package.json'), '{"name":"pack-test","private":true}');
      npm(['install', '--offline', '--no-audit', '--no-fund', '--silent', join(dir, tarball)], dir);
      const { runId } = await client.runs.create({
        agent: 'assistant',
        input: { messages: [{ role: 'user', content: 'weather' }] },
      });
      // async: the API and the worker answering it live in this very process
      const { stdout: out } = await execFileAsync(
        join(dir, 'node_modules', '.bin', 'baton'),
        ['runs', 'watch', runId, '--json'],
        { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 },
      );
      expect(jsonEvents(out).at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
      // the bundle, not the workspace sources, ran
      expect(existsSync(join(dir, 'node_modules', '@baton', 'cli', 'dist', 'baton.js'))).toBe(true);
      expect(existsSync(join(dir, 'node_modules', '@baton', 'cli', 'src'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('Ctrl-C (SIGINT) during a watch exits 130', async () => {
    const { runId } = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'deploy please' }] },
    });
    const child = spawn(process.execPath, [BATON_BIN, 'runs', 'watch', runId, '--no-input'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    await expect.poll(() => out, { timeout: 15_000 }).toContain('baton decide');
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    await client.runs.cancel(runId);
  });

  it('exit codes: usage 2, auth 3, not found 4, refused 5, unreachable 6', async () => {
    // Eleven independent CLI processes, started together: their start-up (most of their time
    // on a loaded machine) overlaps instead of adding up against the test's timeout.
    const downUrl = `http://127.0.0.1:${await freePort()}`;
    const [
      unknownCommand,
      bothDecisions,
      badPayload,
      noKey,
      badKey,
      flagOverrides,
      noRun,
      noAgent,
      tooMany,
      down,
      help,
    ] = await Promise.all([
      runCli(['runs', 'frobnicate'], env),
      runCli(['decide', 'r', 'c', '--approve', '--deny'], env),
      runCli(['decide', 'r', 'c', '--approve', '--payload', '{nope'], env),
      runCli(['agents'], { BATON_URL: env['BATON_URL'] }),
      runCli(['agents'], { ...env, BATON_API_KEY: 'wrong-key-entirely' }),
      // flags override the environment
      runCli(['agents', '--api-key', KEYS.a], { ...env, BATON_API_KEY: 'wrong' }),
      runCli(['runs', 'get', 'no-such-run'], env),
      runCli(['runs', 'create', '-a', 'nobody', '-m', 'hi'], env),
      runCli(['runs', 'list', '--limit', '1000'], env),
      runCli(['agents', '--url', downUrl], env),
      runCli(['--help'], env),
    ]);
    expect(unknownCommand.code).toBe(2);
    expect(bothDecisions.code).toBe(2);
    expect(badPayload.code).toBe(2);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('BATON_API_KEY');
    expect(badKey.code).toBe(3);
    expect(badKey.stderr).toContain('unauthorized');
    expect(flagOverrides.code).toBe(0);
    expect(noRun.code).toBe(4);
    expect(noAgent.code).toBe(4);
    expect(tooMany.code).toBe(5);
    expect(down.code).toBe(6);
    expect(help.code).toBe(0);
    // Eleven CLI start-ups at once: ~10 s on a quiet 2-core machine, 20 s and more at load 20.
  }, 90_000);
});

describe('baton runs watch survives an API restart', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(inject('redisUrl'), createDemoAgents(systemClock));
  });
  afterAll(async () => {
    await stopAllApiProcesses();
    await h.stop();
  });

  it('the API process is killed and restarted on its port mid-watch; the watch finishes exactly once', async () => {
    const port = await freePort();
    const key = 'cli-restart-key-123';
    const start = () =>
      spawnApi({ redisUrl: inject('redisUrl'), prefix: h.prefix, keys: `t:${key}`, port });
    const api = await start();
    const env = { BATON_URL: api.url, BATON_API_KEY: key };
    const client = new BatonClient({ baseUrl: api.url, apiKey: key });
    // slow_report takes 1.5 s: long enough to kill the API while the tool runs
    const { runId } = await client.runs.create({
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'report please' }] },
    });
    const watching = runCli(['runs', 'watch', runId, '--json'], env, 30_000);
    await new Promise((r) => setTimeout(r, 700));
    api.kill('SIGKILL');
    await api.exited;
    const restarted = await start();
    const result = await watching;
    restarted.kill('SIGKILL');
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('reconnecting');
    const events = jsonEvents(result.stdout);
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'done' });
    expect(events.length).toBe((await h.client.store.readEvents(runId)).length);
  });
});
