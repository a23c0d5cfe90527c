/**
 * Drives the sse-fanout client processes (bench/sse-fanout-client.ts): spreads subscriptions over
 * `processes` children (every stream's subscribers round-robin, so each child holds a similar mix
 * of hot and cold streams), waits for READY / DONE, and collects their RESULTs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BenchError, withTimeout } from './lib.ts';
import { onLines } from './child-process.ts';

const CLIENT_MAIN = fileURLToPath(new URL('./sse-fanout-client.ts', import.meta.url));

export interface FanoutResult {
  readonly subscribers: number;
  readonly connected: number;
  readonly ended: number;
  readonly frames: number;
  readonly bytes: number;
  readonly errors: number;
  readonly firstError?: string;
  readonly cpuMs: number;
  /** Delivery lags in 0.01 ms. */
  readonly lagsCentiMs: number[];
}

interface ClientProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<number>;
  readonly done: Promise<void>;
  readonly result: Promise<FanoutResult>;
}

function spawnClient(config: unknown, fdLimit: number, log: (m: string) => void): ClientProcess {
  const child = spawn(
    '/bin/sh',
    [
      '-c',
      `ulimit -n ${fdLimit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$1"`,
      process.execPath,
      CLIENT_MAIN,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let onReady!: (n: number) => void;
  let onDone!: () => void;
  let onResult!: (r: FanoutResult) => void;
  const failures: ((e: Error) => void)[] = [];
  const ready = new Promise<number>((resolve, reject) => {
    onReady = resolve;
    failures.push(reject);
  });
  const done = new Promise<void>((resolve, reject) => {
    onDone = resolve;
    failures.push(reject);
  });
  const result = new Promise<FanoutResult>((resolve, reject) => {
    onResult = resolve;
    failures.push(reject);
  });
  for (const p of [ready, done, result]) p.catch(() => undefined);
  const onFail = (e: Error): void => failures.forEach((f) => f(e));
  onLines(child.stdout, (line) => {
    if (line.startsWith('READY ')) onReady(Number(line.slice(6)));
    else if (line.startsWith('DONE ')) onDone();
    else if (line.startsWith('RESULT ')) onResult(JSON.parse(line.slice(7)) as FanoutResult);
    else if (line.trim() !== '') log(`fanout client: ${line}`);
  });
  child.stderr?.on('data', (chunk: Buffer) =>
    log(`fanout client stderr: ${chunk.toString('utf8').trimEnd()}`),
  );
  child.once('exit', (code, signal) =>
    onFail(new BenchError(`fanout client exited (code ${code}, signal ${signal})`)),
  );
  child.stdin?.write(`${JSON.stringify(config)}\n`);
  return { child, ready, done, result };
}

export interface Subscription {
  readonly path: string;
  readonly count: number;
}

export interface FanoutClients {
  /** Subscribers connected (response headers in), once every process said READY. */
  readonly connected: number;
  /** Resolves when every stream of every process was ended by the server. */
  waitDone(timeoutMs: number): Promise<void>;
  /** Asks every process for its numbers (they exit after answering). */
  report(timeoutMs: number): Promise<FanoutResult[]>;
  stop(): Promise<void>;
}

export async function startFanoutClients(opts: {
  base: string;
  headers: Record<string, string>;
  subscriptions: readonly Subscription[];
  processes: number;
  parallelism: number;
  timeoutMs: number;
  log: (m: string) => void;
}): Promise<FanoutClients> {
  const n = Math.max(1, opts.processes);
  const perProcess: Subscription[][] = Array.from({ length: n }, () => []);
  let turn = 0;
  for (const s of opts.subscriptions) {
    const counts = new Array<number>(n).fill(0);
    for (let i = 0; i < s.count; i += 1) {
      const p = turn++ % n;
      counts[p] = (counts[p] ?? 0) + 1;
    }
    counts.forEach((count, p) => {
      if (count > 0) perProcess[p]?.push({ path: s.path, count });
    });
  }
  const total = opts.subscriptions.reduce((a, s) => a + s.count, 0);
  const fdLimit = Math.ceil(total / n) + 1024;
  const clients = perProcess.map((streams) =>
    spawnClient(
      {
        base: opts.base,
        headers: opts.headers,
        streams,
        parallelism: Math.max(1, Math.ceil(opts.parallelism / n)),
      },
      fdLimit,
      opts.log,
    ),
  );
  const stop = async (): Promise<void> => {
    await Promise.all(
      clients.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.child.exitCode !== null || c.child.signalCode !== null) return resolve();
            c.child.once('exit', () => resolve());
            c.child.kill('SIGKILL');
          }),
      ),
    );
  };
  try {
    const connected = (
      await withTimeout(
        Promise.all(clients.map((c) => c.ready)),
        opts.timeoutMs,
        `${total} SSE subscribers to connect`,
      )
    ).reduce((a, b) => a + b, 0);
    return {
      connected,
      waitDone: async (timeoutMs) => {
        await withTimeout(
          Promise.all(clients.map((c) => c.done)),
          timeoutMs,
          'every subscriber stream to end',
        );
      },
      report: async (timeoutMs) => {
        for (const c of clients) c.child.stdin?.write('REPORT\n');
        return withTimeout(
          Promise.all(clients.map((c) => c.result)),
          timeoutMs,
          'fanout clients to report',
        );
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
