/**
 * cli-start: how long the `baton` CLI takes from spawn to exit, next to a bare `node -e 0`
 * measured in the same run (issue 37: `--help` and a `runs get` within 0.3 s on a quiet machine;
 * the ratio is what stays comparable on a loaded one). Each sample spawns
 * packages/cli/bin/baton.js as `npx baton` and a project's scripts do, with the Node of this
 * process (24) and, when the machine's PATH has an older one first (the system Node 20), with
 * that one too: both must take the bundle (packages/cli/scripts/bundle.js), not the sources.
 * `runs get` reads a finished run of the `bench` agent from a real API (bench/http-stack.ts).
 * The commands alternate within a round so load drift hits them alike; medians are reported.
 *
 * Knobs: BENCH_CLI_STARTS (samples per command, default 15).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BATON_BIN } from '@baton/testing/cli';
import { httpJson, stackKnobs, startStack } from './http-stack.ts';
import { BenchError, envInt, pollUntil, round, type Scenario } from './lib.ts';
import { median, stats } from './stats.ts';

const BUNDLE_SCRIPT = fileURLToPath(new URL('../packages/cli/scripts/bundle.js', import.meta.url));

function timeSpawn(node: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(node, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code === 0) resolve(ms);
      else reject(new BenchError(`${node} ${args.join(' ')} exited with ${code}: ${err.trim()}`));
    });
  });
}

/** The first `node` on PATH that is not this process's Node (e.g. the system Node 20). */
function systemNode(): { path: string; version: string } | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    const path = join(dir, 'node');
    if (dir === '' || !existsSync(path)) continue;
    try {
      const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
      if (version !== process.version) return { path, version };
    } catch {
      // not runnable: look further
    }
  }
  return undefined;
}

export const cliStart: Scenario = {
  name: 'cli-start',
  description: '`baton --help` and `baton runs get` start-to-exit vs a bare `node -e 0`',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('cli-start needs Redis');
    const samples = envInt('BENCH_CLI_STARTS', 15, 1);
    const knobs = stackKnobs();
    // Built (when stale) here, as the integration tests' set-up does, not inside a timed start.
    execFileSync(process.execPath, [BUNDLE_SCRIPT], { stdio: 'ignore' });
    const stack = await startStack(ctx, url, { label: 'cli-start', ...knobs });
    try {
      const created = await httpJson(
        stack.client,
        'POST',
        '/v1/runs',
        { agent: 'bench', input: { messages: [{ role: 'user', content: 'cli-start' }] } },
        10_000,
      );
      const runId = (created.body as { runId?: string } | undefined)?.runId;
      if (created.status !== 202 || runId === undefined)
        throw new BenchError(`POST /v1/runs answered ${created.status}: ${created.text}`);
      await pollUntil(
        async () => {
          const r = await httpJson(stack.client, 'GET', `/v1/runs/${runId}`, undefined, 10_000);
          return (r.body as { status?: string } | undefined)?.status === 'done';
        },
        knobs.startTimeoutMs,
        () => `run ${runId} to finish`,
      );
      const env = {
        ...process.env,
        NO_COLOR: '1',
        BATON_URL: stack.client.base.href.replace(/\/$/, ''),
        BATON_API_KEY: stack.client.key,
      };
      const other = systemNode();
      const commands: Record<string, [string, string[]]> = {
        bareNode: [process.execPath, ['-e', '0']],
        help: [process.execPath, [BATON_BIN, '--help']],
        runsGet: [process.execPath, [BATON_BIN, 'runs', 'get', runId]],
        ...(other
          ? {
              systemBareNode: [other.path, ['-e', '0']],
              systemHelp: [other.path, [BATON_BIN, '--help']],
              systemRunsGet: [other.path, [BATON_BIN, 'runs', 'get', runId]],
            }
          : {}),
      };
      const times: Record<string, number[]> = {};
      // One untimed round: the compile cache and the page cache hold what the timed rounds read.
      for (const [node, args] of Object.values(commands)) await timeSpawn(node, args, env);
      for (let i = 0; i < samples; i += 1)
        for (const [name, [node, args]] of Object.entries(commands))
          (times[name] ??= []).push(await timeSpawn(node, args, env));
      const p50 = (name: string): number | undefined => {
        const t = times[name];
        return t === undefined ? undefined : round(median(t), 1);
      };
      const ratio = (a: string, b: string): number | undefined => {
        const x = p50(a);
        const y = p50(b);
        return x === undefined || y === undefined ? undefined : round(x / y, 2);
      };
      return {
        samples,
        node: process.version,
        systemNode: other?.version ?? null,
        ms: Object.fromEntries(Object.entries(times).map(([name, t]) => [name, stats(t)] as const)),
        p50Ms: Object.fromEntries(Object.keys(times).map((name) => [name, p50(name)])),
        ratios: {
          helpOverBareNode: ratio('help', 'bareNode'),
          runsGetOverBareNode: ratio('runsGet', 'bareNode'),
          ...(other
            ? {
                systemHelpOverSystemBareNode: ratio('systemHelp', 'systemBareNode'),
                systemRunsGetOverSystemBareNode: ratio('systemRunsGet', 'systemBareNode'),
              }
            : {}),
        },
        budgetMs: 300,
        withinBudget: {
          help: (p50('help') ?? Infinity) <= 300,
          runsGet: (p50('runsGet') ?? Infinity) <= 300,
        },
      };
    } finally {
      await stack.stop();
    }
  },
};
