/**
 * `npm start`: the whole of Baton on one machine. Starts the HTTP API and one worker (the agents
 * of BATON_AGENTS, default demo) as child processes with prefixed output, prints the URL, a local
 * API key and a CLI/curl session with an agent the worker loaded, and stops everything on
 * Ctrl-C / SIGTERM. It supervises: a crashed API or worker is restarted alone, with back-off and
 * a cap (start/supervised-child.ts), so Redis and the runs survive it. BATON_WATCH=1 (what
 * `baton dev` sets) also restarts the worker, only it, when a file in its agents' folders changes.
 *
 * What it keeps between starts lives in `.baton/` of the folder it runs in (start/local-state.ts):
 * the local API and admin keys (written once), and the private Redis' data. `--fresh` starts
 * with an empty Redis (the same keys). A worker that crash-loops is restarted every 30 s after
 * its budget; the API and Redis stay, and the banner and /readyz say the worker is down.
 *
 * Redis, first that works:
 *   1. REDIS_URL from the environment (used as told, with BATON_PREFIX or `baton`);
 *   2. a private `redis-server` from PATH, its data (AOF) in .baton/redis, kept between starts;
 *   3. 127.0.0.1:6379, if a Redis answers there: it may be someone else's, so it says so and
 *      uses a prefix of its own (`BATON_PREFIX` if set, else `baton-start-<random>`, kept in
 *      .baton/local.json);
 *   4. otherwise exit, naming the three ways to get Redis.
 * With BATON_LOCAL_REDIS=cluster (and no REDIS_URL), case 2 is a local Redis Cluster instead: 3
 * masters without replicas (BATON_LOCAL_REDIS_REPLICAS=1 adds one each), from the cluster
 * fixture of packages/testing/src/redis-cluster.ts, and API and worker get its
 * `redis+cluster://` URL, as they would for a real cluster.
 */
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { mkdirSync, readFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { createServer } from 'node:net';
import { delimiter, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedisCluster } from '@baton/testing/redis-cluster';
import { bannerLines, fetchLoadedAgents } from './start/banner.ts';
import { loadLocalState, redisDataDir, saveLocalState } from './start/local-state.ts';
import { SupervisedChild } from './start/supervised-child.ts';
import { typecheckOnSave } from './start/typecheck-on-save.ts';
import { agentSourceDirs, watchAgentSources } from './start/watch-agents.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const color = process.stdout.isTTY
  ? (code: number, s: string) => `\x1b[${code}m${s}\x1b[0m`
  : (_code: number, s: string) => s;
const say = (line: string): void => void process.stdout.write(`${color(36, '[baton]')} ${line}\n`);

const MISSING_REDIS =
  'Baton needs Redis and none was found. Any one of these works:\n' +
  '  1. `redis-server` on PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis):\n' +
  '     npm start then runs a private one, its data kept in .baton/redis between starts\n' +
  '  2. REDIS_URL=redis://host:6379 npm start   (any Redis 7+ you can write to)\n' +
  '  3. a Redis on 127.0.0.1:6379, e.g. `docker run -p 6379:6379 redis:7` (used with a key prefix of its own)';

async function answersPing(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 700,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function findOnPath(bin: string): Promise<string | undefined> {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, bin);
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return undefined;
}

/** `preferred` when nobody listens there, else any free port. */
function freePort(preferred = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (err) => (preferred === 0 ? reject(err) : resolve(freePort())));
    srv.listen(preferred, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const USAGE =
  'usage: npm start [-- --fresh]   (--fresh: start with an empty local Redis; the keys stay)';
const args = process.argv.slice(2);
for (const arg of args)
  if (arg !== '--fresh') {
    process.stderr.write(`unknown argument ${arg}\n${USAGE}\n`);
    process.exit(2);
  }
const fresh = args.includes('--fresh');
// The API and the worker run in the caller's folder: BATON_AGENTS paths, and the commands an
// agents file starts (MCP servers), are relative to it (`baton dev` runs this from a project).
// So does what is kept between starts (.baton/).
const cwd = process.cwd();
const state = loadLocalState(cwd, fresh);

/** A process id that still runs (a private Redis a killed start left behind). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function pidIn(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

interface RedisChoice {
  url: string;
  /** A key prefix this session must use (a Redis it was not told to use). */
  prefix?: string;
  stop: () => Promise<void>;
}

async function resolveRedis(): Promise<RedisChoice> {
  const env = process.env['REDIS_URL'];
  if (env) {
    if (fresh) say('--fresh does nothing with REDIS_URL: the data there is yours to clear');
    say(`Redis: REDIS_URL (${env.replace(/\/\/[^@]*@/, '//***@')})`);
    return { url: env, stop: async () => {} };
  }
  const bin = await findOnPath('redis-server');
  const local = process.env['BATON_LOCAL_REDIS'];
  if (local !== undefined && local !== '' && local !== 'cluster')
    throw new Error(`BATON_LOCAL_REDIS must be "cluster" or unset (got "${local}")`);
  if (local === 'cluster') {
    if (!bin) {
      process.stderr.write(
        'BATON_LOCAL_REDIS=cluster starts a local Redis Cluster from `redis-server` and `redis-cli`, and neither is on PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)\n',
      );
      process.exit(1);
    }
    const replicas = Number(process.env['BATON_LOCAL_REDIS_REPLICAS'] ?? '0');
    say(`Redis: starting a local Redis Cluster (3 masters, ${replicas} replica(s) each)…`);
    const cluster = await startRedisCluster({ masters: 3, replicasPerMaster: replicas });
    say(
      `Redis: a local Redis Cluster on ports ${cluster.ports.join(', ')} (removed on exit); REDIS_URL=${cluster.url}`,
    );
    return { url: cluster.url, stop: () => cluster.stop() };
  }
  if (!bin) {
    if (await answersPing('redis://127.0.0.1:6379')) {
      // Someone else's Redis, perhaps: never mix keys with another Baton or app silently.
      const prefix = process.env['BATON_PREFIX'] ?? state.sharedPrefix;
      say(
        `Redis: no REDIS_URL and no redis-server on PATH; using the shared Redis on 127.0.0.1:6379 with key prefix "${prefix}" (set REDIS_URL and BATON_PREFIX to choose)`,
      );
      return { url: 'redis://127.0.0.1:6379', prefix, stop: async () => {} };
    }
    process.stderr.write(`${MISSING_REDIS}\n`);
    process.exit(1);
  }
  const dir = redisDataDir(cwd);
  mkdirSync(dir, { recursive: true });
  const pidFile = join(dir, 'redis.pid');
  const stopPid = async (pid: number): Promise<void> => {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    // Redis writes its AOF and exits; wait for it (its data folder is the next start's).
    for (let i = 0; i < 60 && alive(pid); i += 1) await new Promise((r) => setTimeout(r, 50));
  };
  // A start killed without its Ctrl-C left its Redis running on this folder's data: use it
  // rather than start a second server on the same files.
  const orphan = pidIn(pidFile);
  if (orphan !== undefined && alive(orphan) && state.redisPort !== undefined) {
    const url = `redis://127.0.0.1:${state.redisPort}`;
    if (await answersPing(url)) {
      say(
        `Redis: the private redis-server of an earlier start still runs on port ${state.redisPort} (data in ${relative(cwd, dir)}); using it`,
      );
      return { url, stop: () => stopPid(orphan) };
    }
  }
  const port = await freePort(state.redisPort ?? 0);
  const child = spawn(
    bin,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--pidfile',
      pidFile,
      // The runs outlive this start: every write in the append-only file (fsync each second),
      // read back by the next start.
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--save',
      '',
      '--maxmemory-policy',
      'noeviction',
    ],
    // A process group of its own: Ctrl-C reaches the whole foreground group, and Redis must
    // outlive the worker's graceful stop (it finishes its jobs there), so we stop it last.
    { stdio: 'ignore', detached: true },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 200 && !(await answersPing(url)); i += 1)
    await new Promise((r) => setTimeout(r, 50));
  if (!(await answersPing(url))) {
    child.kill('SIGKILL');
    throw new Error(`the private redis-server (${bin}) did not start on port ${port}`);
  }
  saveLocalState(cwd, { ...state, redisPort: port });
  say(
    `Redis: a private redis-server on port ${port}, its data kept in ${relative(cwd, dir) || dir} between starts (\`npm start -- --fresh\` starts empty; set REDIS_URL to use another)`,
  );
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
      }
    },
  };
}

// Which Node runs Baton: npm scripts put the project's own Node 24 (the `node` dev dependency)
// ahead of the system one, whatever version that is.
say(`Node ${process.version} (${process.execPath})`);
const redis = await resolveRedis();
const env: NodeJS.ProcessEnv = {
  ...process.env,
  REDIS_URL: redis.url,
  ...(redis.prefix === undefined ? {} : { BATON_PREFIX: redis.prefix }),
  BATON_AGENTS: process.env['BATON_AGENTS'] ?? 'demo',
  LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'warn',
};
// ARCHIVE_URL reaches both processes with the rest of the environment (docs/archive.md).
if (env['ARCHIVE_URL'])
  say(
    `Archive: ARCHIVE_URL (${env['ARCHIVE_URL'].replace(/\/\/[^@]*@/, '//***@')}): finished runs are kept in PostgreSQL`,
  );
else say('Archive: none (set ARCHIVE_URL=postgres://… to keep finished runs in PostgreSQL)');
// The same keys every start (.baton/local.json): an exported BATON_API_KEY and a console tab
// stay valid across restarts.
let apiKey: string | undefined;
if (!env['API_KEYS'] && !env['API_KEYS_FILE']) {
  apiKey = state.apiKey;
  env['API_KEYS'] = `local:${apiKey}`;
}
let adminKey: string | undefined;
if (!env['ADMIN_KEYS']) {
  adminKey = state.adminKey;
  env['ADMIN_KEYS'] = `admin:${adminKey}`;
}

const watching = process.env['BATON_WATCH'] === '1' ? agentSourceDirs(env, cwd) : [];
let apiUrl: string | undefined;
let workerId: string | undefined;
let stopping = false;
let announced = false;
/** Set while the worker crash-loops (its restart budget spent): what the banner says. */
let workerDown: string | undefined;
/** How long a crash-looping worker waits before each next start. */
const WORKER_DOWN_RETRY_MS = 30_000;

async function announce(): Promise<void> {
  // The worker's id names its agents; a worker that is down has none to name.
  if (announced || !apiUrl || (!workerId && workerDown === undefined)) return;
  announced = true;
  const url = apiUrl;
  const key = apiKey ?? firstKey(env['API_KEYS']);
  const agents = await fetchLoadedAgents(url, key, workerId);
  const lines = bannerLines({
    url,
    key: key ?? '<one of your API_KEYS>',
    keyGenerated: apiKey !== undefined,
    adminKey,
    agents,
    agentSources: env['BATON_AGENTS'] ?? 'demo',
    watching: watching.map((d) => relative(cwd, d) || '.'),
    keptIn: relative(cwd, join(cwd, '.baton', 'local.json')),
    workerDown,
    bold: (s) => color(1, s),
  });
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** A plain key from API_KEYS (`name:key`), for the banner's own request; none if hashed. */
function firstKey(keys: string | undefined): string | undefined {
  const entry = (keys ?? '').split(/[\n,]/)[0]?.trim() ?? '';
  const secret = entry.slice(entry.indexOf(':') + 1);
  return secret && !secret.startsWith('sha256:') ? secret : undefined;
}

const onGiveUp = (name: string) => (reason: string) => {
  if (stopping) return;
  if (name === 'worker' && watching.length > 0) {
    say(`${reason}. Fix your agents and save: the worker starts again (Ctrl-C stops everything)`);
    return;
  }
  say(`${reason}; stopping the rest`);
  void shutdown(1);
};

const api = new SupervisedChild(
  {
    name: 'API',
    script: join(root, 'apps/api/src/main.ts'),
    tag: color(35, '[api]   '),
    readyLine: /^LISTENING (\S+)/,
  },
  {
    env,
    cwd,
    hooks: {
      say,
      onReady: (url, restarts) => {
        apiUrl = url;
        if (restarts > 0) say(`the API is back at ${url}`);
        void announce();
      },
      onGiveUp: onGiveUp('api'),
    },
  },
);
const worker = new SupervisedChild(
  {
    name: 'worker',
    script: join(root, 'apps/worker/src/main.ts'),
    tag: color(33, '[worker]'),
    readyLine: /^READY (\S+)/,
  },
  {
    env,
    cwd,
    hooks: {
      say,
      onReady: (id, restarts) => {
        const first = workerId === undefined;
        workerId = id;
        if (workerDown !== undefined) {
          workerDown = undefined;
          say(color(32, 'the worker is UP again: runs are being worked on'));
        }
        if (first) return void announce();
        void (async () => {
          const key = apiKey ?? firstKey(env['API_KEYS']);
          const agents = apiUrl ? await fetchLoadedAgents(apiUrl, key, id) : [];
          const names = agents.map((a) => a.name).join(', ');
          say(
            `the worker is ${restarts > 0 ? 'back' : 'up'} (${id})${names ? `; agents: ${names}` : ''}`,
          );
          if (!announced) await announce();
        })();
      },
      onGiveUp: onGiveUp('worker'),
      onDown: (reason, retryMs) => {
        workerDown = reason;
        say(
          color(
            31,
            `the worker is DOWN: ${reason} (an agent that crashes it?). The API${apiUrl ? ` (${apiUrl})` : ''} and Redis stay up and keep every run; /readyz says "workers":{"state":"down"} once its heartbeat lapses. Starting it again in ${retryMs / 1000} s; fix the agent${watching.length > 0 ? ' and save' : ', or Ctrl-C'}.`,
          ),
        );
        // A worker that never came up has no banner yet: print it now, saying so.
        if (!announced) void announce();
      },
    },
    keepRestarting: { retryMs: WORKER_DOWN_RETRY_MS },
  },
);

let stopped: Promise<never> | undefined;
/** Once: a second signal (Ctrl-C reaches every process of the group, wrappers pass SIGTERM on) waits for the first. */
function shutdown(code: number): Promise<never> {
  stopped ??= (async () => {
    stopping = true;
    say('stopping…');
    watcher?.close();
    typecheck?.close();
    await Promise.all([api.stop(), worker.stop()]);
    await redis.stop();
    process.exit(code);
  })();
  return stopped;
}
// Whoever reads our output may be gone first (a closed terminal, a parent that exited).
process.stdout.on('error', () => undefined);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(0));

const typecheck =
  watching.length > 0 ? typecheckOnSave(cwd, say, color(34, '[tsc]   ')) : undefined;
const watcher =
  watching.length > 0
    ? watchAgentSources(watching, cwd, (file) => {
        if (stopping) return;
        say(`${file} changed; restarting the worker (the API, Redis and the runs stay)`);
        void worker.reload();
        if (/\.[cm]?ts$/.test(file)) typecheck?.run();
      })
    : undefined;
api.start();
worker.start();
