/**
 * Test fixture: a real API PROCESS (`node apps/api/src/main.ts`), for tests where "the API died"
 * must mean a dead process with its sockets torn down by the kernel, not a closed object.
 *
 *   const api = await spawnApi({ redisUrl, prefix, keys: 'tenant-a:secret' });
 *   api.url; api.kill('SIGKILL'); await api.exited;
 *
 * A process 'exit' hook SIGKILLs whatever is still alive if the test run aborts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
// V8's code cache: restarts (one per trial in the reconnect test) start ~15% faster.
const COMPILE_CACHE = join(REPO_ROOT, '.cache', 'node-compile-cache');

export interface ApiProcess {
  readonly pid: number;
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
  isAlive(): boolean;
  output(): string;
}

export interface SpawnApiOptions {
  readonly redisUrl: string;
  readonly prefix: string;
  /** API_KEYS. */
  readonly keys: string;
  /** PORT (default 0: any free port). */
  readonly port?: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly readyTimeoutMs?: number;
  /** Every line the process prints (stdout and stderr), as it comes. */
  readonly onLine?: (line: string) => void;
  /** The checkout to run (default this one): the upgrade test runs an earlier release's tree. */
  readonly root?: string;
}

const live = new Set<ApiProcess>();
let hooked = false;

export async function spawnApi(opts: SpawnApiOptions): Promise<ApiProcess> {
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const p of live) if (p.isAlive()) p.child.kill('SIGKILL');
    });
  }
  mkdirSync(COMPILE_CACHE, { recursive: true });
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  Object.assign(env, {
    REDIS_URL: opts.redisUrl,
    BATON_PREFIX: opts.prefix,
    API_KEYS: opts.keys,
    PORT: String(opts.port ?? 0),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    EVENT_METRICS: 'false',
    SSE_HEARTBEAT_MS: '1000',
    NODE_COMPILE_CACHE: COMPILE_CACHE,
    ...opts.env,
  });
  const child = spawn(process.execPath, ['apps/api/src/main.ts'], {
    cwd: opts.root ?? REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  const remember = (line: string): void => {
    opts.onLine?.(line);
    tail.push(line);
    if (tail.length > 100) tail.shift();
  };
  let alive = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.once('exit', (code, signal) => {
      alive = false;
      res({ code, signal });
    }),
  );
  createInterface({ input: child.stderr }).on('line', (l) => remember(`[stderr] ${l}`));
  // A bound on waiting for LISTENING, not a pace: ~1 s quiet, 20 s and more at a load of 25.
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error(`API not listening within ${readyTimeoutMs} ms\n${tail.join('\n')}`));
    }, readyTimeoutMs);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('LISTENING ')) {
        opts.onLine?.(line);
        clearTimeout(timer);
        res(line.slice('LISTENING '.length).trim());
      } else remember(line);
    });
    void exited.then((e) => {
      clearTimeout(timer);
      rej(new Error(`API exited before listening (${e.code ?? e.signal})\n${tail.join('\n')}`));
    });
  });
  const handle: ApiProcess = {
    pid: child.pid ?? -1,
    url,
    port: Number(new URL(url).port),
    child,
    exited,
    kill: (signal = 'SIGTERM') => {
      if (alive) child.kill(signal);
    },
    isAlive: () => alive,
    output: () => tail.join('\n'),
  };
  live.add(handle);
  void exited.then(() => live.delete(handle));
  return handle;
}

/** Kills every API process still alive and waits for them. */
export async function stopAllApiProcesses(): Promise<void> {
  const all = [...live];
  for (const p of all) p.kill('SIGKILL');
  await Promise.all(all.map((p) => p.exited));
}
