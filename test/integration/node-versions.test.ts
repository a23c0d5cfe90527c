/**
 * README and examples promise that their commands run as written with any Node 20.17+ with npm:
 * npm scripts and npx run the project's own Node 24 (node_modules/.bin first on PATH). Here each
 * command runs through npm with the SYSTEM's PATH (the repository's Node dirs taken out), so with
 * the system's Node first, 20 on the CI machine: the examples, the worker and the CLI, against a
 * live API where they need one. The packed CLI (client bundled) also runs on the system Node
 * itself, as another project installs it: its engines field says 20.17+.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { withRepoLock } from '@baton/testing/repo-lock';
import { SYSTEM_PATH, systemNode } from '@baton/testing/system-node';

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));

const NODE = systemNode();
const HAS_NPM = NODE?.npm === true;
if (!NODE || !HAS_NPM)
  console.warn(
    '[baton tests] README commands on the system Node skipped: no node and npm on the PATH outside node_modules.',
  );

interface Ran {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/** The environment a reader's shell has: the system PATH, none of npm's own variables. */
function readerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('npm_') && !k.startsWith('VITEST') && k !== 'NODE_OPTIONS') env[k] = v;
  return { ...env, PATH: SYSTEM_PATH, NO_COLOR: '1', ...extra };
}

const started = new Set<ChildProcess>();

/** Starts `cmd args` as its own process group, so the group (npm, sh, node) can be stopped. */
function start(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = REPO) {
  const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  started.add(child);
  child.on('close', () => started.delete(child));
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const done = new Promise<Ran>((res, rej) => {
    child.on('error', rej);
    child.on('close', (code) => res({ code, out, err }));
  });
  return { child, done, output: () => `${out}\n${err}` };
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = REPO): Promise<Ran> {
  return start(cmd, args, env, cwd).done;
}

function stopGroup(child: ChildProcess): void {
  if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
}

/** npm and npx start a Node and load TypeScript sources: seconds when quiet, far more when loaded. */
const SLOW = 180_000;

describe.skipIf(!NODE || !HAS_NPM)(
  `README commands with the system Node (${NODE?.version})`,
  () => {
    let c: ApiCluster;
    let url: string;
    beforeAll(async () => {
      c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock));
      url = c.apis[0]!.url;
    });
    afterAll(async () => {
      await c.stop();
    });

    it(
      'npm and npx run the project Node 24, whatever the system Node is',
      async () => {
        const r = await run('npx', ['node', '-v'], readerEnv());
        expect(r.code, r.err).toBe(0);
        expect(Number(/^v(\d+)/.exec(r.out.trim())?.[1])).toBeGreaterThanOrEqual(24);
      },
      SLOW,
    );

    it(
      'npm run example:demo: one run in-process, approved, done',
      async () => {
        const r = await run('npm', ['run', '-s', 'example:demo'], readerEnv());
        expect(r.code, r.err).toBe(0);
        expect(r.out).toContain('approving');
        expect(r.out).toMatch(/run\.finished\s+done \(natural_end\)/);
      },
      SLOW,
    );

    it(
      'npm run example:client against a live API: approved, finished done',
      async () => {
        const r = await run(
          'npm',
          ['run', '-s', 'example:client'],
          readerEnv({ BATON_URL: url, BATON_API_KEY: KEYS.a }),
        );
        expect(r.code, r.err).toBe(0);
        expect(r.out).toMatch(/409 call_unknown/);
        expect(r.out).toMatch(/finished: done/);
      },
      SLOW,
    );

    it(
      'npx baton: the CLI the README shows',
      async () => {
        const help = await run('npx', ['baton', '--help'], readerEnv());
        expect(help.code, help.err).toBe(0);
        const agents = await run(
          'npx',
          ['baton', 'agents', '--json'],
          readerEnv({ BATON_URL: url, BATON_API_KEY: KEYS.a }),
        );
        expect(agents.code, agents.err).toBe(0);
        expect(agents.out).toContain('"assistant"');
      },
      SLOW,
    );

    it(
      'npm run example:own-worker, then npm run worker with BATON_AGENTS: each serves `echo`',
      async () => {
        const client = new BatonClient({ baseUrl: url, apiKey: KEYS.a });
        const env = readerEnv({ REDIS_URL: inject('redisUrl'), BATON_PREFIX: c.h.prefix });
        const workerIds = async (): Promise<string[]> => {
          const agent = await client.agents.get('echo').catch(() => undefined);
          return agent?.workers ?? [];
        };
        for (const [script, extra] of [
          ['example:own-worker', {}],
          ['worker', { BATON_AGENTS: './examples/my-agents.ts:echo', LOG_LEVEL: 'warn' }],
        ] as const) {
          // The previous worker has left (awaited below) but its advert outlives it for a heartbeat
          // TTL: wait for a worker that was not there before.
          const before = new Set(await workerIds());
          const worker = start('npm', ['run', '-s', script], { ...env, ...extra });
          try {
            await expect
              .poll(async () => (await workerIds()).some((id) => !before.has(id)), {
                timeout: 60_000,
                interval: 200,
              })
              .toBe(true);
            const { runId } = await client.runs.create({
              agent: 'echo',
              input: { messages: [{ role: 'user', content: 'three little words' }] },
            });
            let finished: string | undefined;
            for await (const e of client.runs.stream(runId))
              if (e.type === 'run.finished') finished = e.status;
            expect(finished, worker.output()).toBe('done');
          } finally {
            stopGroup(worker.child);
          }
          const exit = await worker.done;
          // SIGTERM is the rolling deploy's stop: in-flight jobs finish and the worker leaves cleanly.
          expect(exit.code === 0 || exit.code === null, worker.output()).toBe(true);
        }
      },
      2 * SLOW,
    );

    it(
      'npm run example:mcp-server -- --http 0: serves MCP over HTTP',
      async () => {
        const server = start(
          'npm',
          ['run', '-s', 'example:mcp-server', '--', '--http', '0'],
          readerEnv(),
        );
        try {
          await expect.poll(() => server.output(), { timeout: 60_000 }).toMatch(/MCP http:\/\/\S+/);
        } finally {
          stopGroup(server.child);
          await server.done;
        }
      },
      SLOW,
    );

    it(
      'the packed CLI runs on the system Node itself (its engines say 20.17+)',
      async () => {
        const dir = mkdtempSync(join(tmpdir(), 'baton-cli-node-'));
        try {
          // Locked: cli.test.ts packs packages/cli too, and a pack deletes dist/ at its end.
          const packed = await withRepoLock('cli-pack', () =>
            run(
              'npm',
              ['pack', '--pack-destination', dir, '--silent'],
              process.env,
              join(REPO, 'packages', 'cli'),
            ),
          );
          expect(packed.code, packed.err).toBe(0);
          const tarball = packed.out.trim().split('\n').at(-1)!;
          writeFileSync(join(dir, 'package.json'), '{"name":"node-versions","private":true}');
          const installed = await run(
            'npm',
            ['install', '--offline', '--no-audit', '--no-fund', '--silent', join(dir, tarball)],
            readerEnv(),
            dir,
          );
          expect(installed.code, installed.err).toBe(0);
          const bin = join(dir, 'node_modules', '@baton', 'cli', 'bin', 'baton.js');
          const env = readerEnv({ BATON_URL: url, BATON_API_KEY: KEYS.a });
          const agents = await run(NODE!.path, [bin, 'agents', '--json'], env, dir);
          expect(agents.code, agents.err).toBe(0);
          expect(agents.out).toContain('"assistant"');
          // A whole run through the bundled client: create, watch to the end (the weather has no approval).
          const created = await run(
            NODE!.path,
            [bin, 'runs', 'create', '--agent', 'assistant', '-m', 'weather', '--watch', '--json'],
            env,
            dir,
          );
          expect(created.code, created.err).toBe(0);
          expect(created.out).toMatch(/"type":"run\.finished".*"status":"done"/);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
      SLOW,
    );
  },
);
