/**
 * Test fixture: a private redis-server that can be killed and started again on the same port and
 * data directory, for outage and durability tests (the shared fixture in redis.ts is one server for
 * the whole run and keeps nothing on disk).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { findRedisServer, freePort, pingRedis } from './redis.ts';
import { runTempPrefix } from './run-processes.ts';

export interface RedisProcess {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Signals the server (SIGKILL: a crash; SIGTERM: a clean shutdown) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and data directory; resolves once it answers PING. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  stop(): Promise<void>;
}

export interface RedisProcessOptions {
  /** 'always': AOF fsynced before every reply; 'everysec'; 'off': no persistence at all. */
  readonly aof: 'always' | 'everysec' | 'off';
  /** The port to listen on (default: a free one). */
  readonly port?: number;
  /** More redis-server arguments (e.g. `--cluster-enabled yes`). */
  readonly args?: readonly string[];
}

export async function startRedisProcess(opts: RedisProcessOptions): Promise<RedisProcess> {
  const bin = await findRedisServer();
  if (!bin) throw new Error('redis-server is needed on PATH for this test');
  const port = opts.port ?? (await freePort());
  const dir = await mkdtemp(runTempPrefix('baton-redis-proc'));
  const url = `redis://127.0.0.1:${port}`;
  const persistence =
    opts.aof === 'off'
      ? ['--appendonly', 'no']
      : ['--appendonly', 'yes', '--appendfsync', opts.aof];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const killOnExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.on('exit', killOnExit);
  const start = async (): Promise<void> => {
    const proc = spawn(
      bin,
      [
        ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir],
        ...persistence,
        ...(opts.args ?? []),
      ],
      { stdio: 'ignore' },
    );
    child = proc;
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    while (!(await pingRedis(url, 200))) {
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    await exited;
  };
  await start();
  return {
    url,
    port,
    dir,
    kill,
    start,
    stop: async () => {
      await kill('SIGKILL');
      process.off('exit', killOnExit);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
