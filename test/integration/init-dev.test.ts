/**
 * Your agents in your own folder, as a new user gets there on the system Node (20 here): `baton
 * init` makes the project, `npm install` links Baton (no registry for @baton/*), `npm run dev`
 * runs it, and saving agents.ts restarts the worker only: a run waiting for a decision across the
 * reload completes, the next run calls the edited tool, and a save that does not load stops the
 * worker alone until the fix is saved.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import type { RunView } from '@baton/protocol';
import { BATON_BIN } from '@baton/testing/cli';
import { npmInstallCached } from '@baton/testing/npm-install';
import { freePort, uniquePrefix } from '@baton/testing/redis';
import { startProcess, type StartProcess } from '@baton/testing/start-process';
import { waitFor } from '@baton/testing/worker-harness';

const run = promisify(execFile);

// The PATH a user has: without the repo's node_modules/.bin and ensure-node's Node 24, so `node`
// is the system one (whatever version it is) and Baton must find its Node 24 by itself.
const userPath = (process.env['PATH'] ?? '')
  .split(delimiter)
  .filter((d) => d && !d.includes('node_modules') && !d.includes(join('baton', 'node24')))
  .join(delimiter);
const PATH = existsSync(
  execFileSync('sh', ['-c', 'command -v node || true'], {
    env: { PATH: userPath },
    encoding: 'utf8',
  }).trim() || '/nonexistent',
)
  ? userPath
  : (process.env['PATH'] ?? '');

let dir: string;
let project: string;
let dev: StartProcess | undefined;
let client: BatonClient;

function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH, NO_COLOR: '1', ...extra };
  for (const k of ['BATON_AGENTS', 'BATON_AGENTS_FILE', 'BATON_WATCH', 'ADMIN_KEYS', 'API_KEYS'])
    delete env[k];
  return env;
}

async function until(runId: string, status: RunView['status']): Promise<RunView> {
  return waitFor(
    async () => {
      const view = await client.runs.get(runId);
      return view.status === status ? view : null;
    },
    60_000,
    `run ${runId} to be ${status}`,
  );
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-init-'));
  project = join(dir, 'my-agents');
  const nodeVersion = execFileSync('node', ['-v'], { env: { PATH }, encoding: 'utf8' }).trim();
  console.log(`[init-dev] the user's node: ${nodeVersion}`);
  const init = await run('node', [BATON_BIN, 'init', project, '--no-install'], {
    env: userEnv({}),
    cwd: dir,
  });
  expect(init.stdout).toContain('npm run dev');
  // From npm's cache: any clone's `npm install` put zod and the OpenAI provider there.
  const installed = await npmInstallCached([], {
    cwd: project,
    env: userEnv({}),
    timeout: 180_000,
  });
  console.log(`[init-dev] npm install ${installed.offline ? 'offline' : 'asked the registry'}`);
}, 240_000);

afterAll(async () => {
  await dev?.stop();
  await rm(dir, { recursive: true, force: true });
});

it('baton init makes a project of TypeScript and YAML agents linked to this clone', async () => {
  const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  expect(manifest.scripts['dev']).toBe('baton dev agents.ts baton.agents.yaml');
  expect(manifest.scripts['typecheck']).toBe('tsc --noEmit -p tsconfig.json');
  expect(manifest.devDependencies['typescript']).toBeDefined();
  expect(manifest.dependencies['@baton/core']).toMatch(/^file:.*packages\/core$/);
  expect(manifest.devDependencies['@baton/cli']).toMatch(/^file:.*packages\/cli$/);
  for (const file of ['agents.ts', 'baton.agents.yaml', '.env.example', 'README.md', '.gitignore'])
    expect(existsSync(join(project, file)), file).toBe(true);
  // A second init into the same folder refuses rather than overwrite.
  const again = await run('node', [BATON_BIN, 'init', project, '--no-install'], {
    env: userEnv({}),
  }).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number; stderr: string }) => error,
  );
  expect(again.code).toBe(2);
  expect(again.stderr).toContain('is not empty');
});

it('npm run dev: a saved tool is used by the next run; a waiting run survives the reload', async () => {
  const key = `bk_${randomBytes(12).toString('hex')}`;
  const port = await freePort();
  // The project's .env fills what the environment does not set: the key the client uses below.
  await writeFile(join(project, '.env'), `API_KEYS=local:${key}\nPORT=1\n`);
  dev = startProcess('npm', ['run', 'dev'], {
    cwd: project,
    env: userEnv({
      REDIS_URL: inject('redisUrl'),
      BATON_PREFIX: uniquePrefix('dev'),
      PORT: String(port), // wins over the .env's
      LOG_LEVEL: 'warn',
    }),
  });
  await dev.waitForLine(/^Press Ctrl-C to stop\./, { timeoutMs: 90_000 });
  const banner = dev.lines.join('\n');
  expect(banner).toMatch(
    /Agents \(BATON_AGENTS=agents\.ts,baton\.agents\.yaml\): counter, helper, writer/,
  );
  expect(banner).toContain('npx baton runs create --agent counter');
  expect(banner).toMatch(/\[baton\] Node v2[4-9]/);
  client = new BatonClient({ baseUrl: `http://localhost:${port}`, apiKey: key });

  const first = await client.runs.create({
    agent: 'counter',
    input: { messages: [{ role: 'user', content: 'one two three' }] },
  });
  const waiting = await until(first.runId, 'waiting');
  const apis = dev.descendants('apps/api/src/main.ts');

  const file = join(project, 'agents.ts');
  const source = await readFile(file, 'utf8');
  expect(source).toContain('toolResult.success({ words: ');
  let from = dev.lines.length;
  await writeFile(file, source.replace('{ words: ', '{ edited: true, words: '));
  await dev.waitForLine(/agents\.ts changed; restarting the worker/, { from });
  await dev.waitForLine(/the worker is back \(\S+\); agents: counter, helper, writer/, { from });
  expect(dev.descendants('apps/api/src/main.ts')).toEqual(apis);

  // The run that waited across the reload goes on.
  await client.runs.approve(first.runId, waiting.await!.calls[0]!.toolCallId);
  const firstDone = await until(first.runId, 'done');
  expect(firstDone.lastAssistantMessage).toContain('count_words: {"words":3}');

  // The next run calls the code as saved.
  const second = await client.runs.create({
    agent: 'counter',
    input: { messages: [{ role: 'user', content: 'four five' }] },
  });
  const secondWaiting = await until(second.runId, 'waiting');
  await client.runs.approve(second.runId, secondWaiting.await!.calls[0]!.toolCallId);
  const secondDone = await until(second.runId, 'done');
  expect(secondDone.lastAssistantMessage).toContain('count_words: {"edited":true,"words":2}');

  // A save that does not load stops the worker alone; saving the fix brings it back.
  from = dev.lines.length;
  await writeFile(file, `${source}\nexport const broken = ;\n`);
  await dev.waitForLine(/the worker exited \(code 1\) before it was ready\. Fix your agents/, {
    from,
  });
  // The line that says what is wrong names the place: file, line, column.
  const brokenLine = source.split('\n').length + 1;
  expect(dev.lines.slice(from).join('\n')).toMatch(
    new RegExp(`cannot import it: agents\\.ts:${brokenLine}:23: Expression expected`),
  );
  expect(dev.child.exitCode).toBeNull();
  from = dev.lines.length;
  await writeFile(file, source);
  await dev.waitForLine(/the worker is back \(\S+\); agents: counter, helper, writer/, { from });
  expect(dev.descendants('apps/api/src/main.ts')).toEqual(apis);
}, 240_000);

it('npm run dev type-checks a saved agents.ts and reports errors without holding the worker back', async () => {
  const file = join(project, 'agents.ts');
  const source = await readFile(file, 'utf8');
  const from = dev!.lines.length;
  // Valid JavaScript once the types are stripped, a type error for tsc.
  await writeFile(file, source.replace('text.split(/\\s+/)', 'text.splitt(/\\s+/)'));
  await dev!.waitForLine(/the worker is back \(\S+\); agents: counter, helper, writer/, { from });
  await dev!.waitForLine(/typecheck: 1 type error; the worker runs the code anyway/, {
    from,
    timeoutMs: 120_000,
  });
  expect(dev!.lines.slice(from).join('\n')).toMatch(/agents\.ts\(\d+,\d+\): error TS2551/);
  const after = dev!.lines.length;
  await writeFile(file, source);
  await dev!.waitForLine(/typecheck: no type errors/, { from: after, timeoutMs: 120_000 });
}, 300_000);
