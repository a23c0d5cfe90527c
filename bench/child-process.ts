/** Child processes of the bench (API, worker, echo server): start, wait for ready, CPU, RSS. */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent } from 'node:http';
import type { Readable } from 'node:stream';
import { readFile } from 'node:fs/promises';
import { BenchError, processCpuSeconds, round, withTimeout, type BenchContext } from './lib.ts';

export interface Child {
  readonly process: ChildProcess;
  /** The rest of the line that started with the ready marker (e.g. the API's URL). */
  readonly ready: string;
  stop(): Promise<void>;
}

/** Calls `onLine` with every complete line written to `stream` (a child's stdout). */
export function onLines(stream: Readable | null | undefined, onLine: (line: string) => void): void {
  let buffered = '';
  stream?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      onLine(line);
    }
  });
}

export interface ChildOptions {
  /** Raise the open-files limit first (`ulimit -n`, through /bin/sh; up to the hard limit). */
  readonly fdLimit?: number;
  /** Called with every stdout line that is not the ready marker (default: logged). */
  readonly onLine?: (line: string) => void;
}

export async function startChild(
  ctx: BenchContext,
  label: string,
  script: string,
  env: Record<string, string>,
  readyMarker: string,
  timeoutMs: number,
  opts: ChildOptions = {},
): Promise<Child> {
  const child =
    opts.fdLimit === undefined
      ? spawn(process.execPath, [script], {
          env: { ...process.env, ...env },
          stdio: ['pipe', 'pipe', 'pipe'],
        })
      : spawn(
          '/bin/sh',
          [
            '-c',
            `ulimit -n ${opts.fdLimit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$1"`,
            process.execPath,
            script,
          ],
          { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] },
        );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited.finally(() => clearTimeout(timer));
  };
  const ready = new Promise<string>((resolve, reject) => {
    onLines(child.stdout, (line) => {
      if (line.startsWith(readyMarker)) resolve(line.slice(readyMarker.length).trim());
      else if (opts.onLine) opts.onLine(line);
      else if (line.trim() !== '') ctx.log(`${label}: ${line}`);
    });
    child.stderr?.on('data', (chunk: Buffer) =>
      ctx.log(`${label} stderr: ${chunk.toString('utf8').trimEnd()}`),
    );
    child.once('exit', (code, signal) =>
      reject(new BenchError(`${label} exited (code ${code}, signal ${signal}) before ready`)),
    );
  });
  try {
    const rest = await withTimeout(ready, timeoutMs, `${label} to print ${readyMarker.trim()}`);
    return { process: child, ready: rest, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Resident set size of another process in bytes, from /proc (Linux); undefined elsewhere. */
export async function processRssBytes(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

export async function childCpuSeconds(c: Child | undefined): Promise<number | undefined> {
  return c?.process.pid === undefined ? undefined : processCpuSeconds(c.process.pid);
}

/** (b - a) seconds as ms per unit, or undefined when /proc is not there. */
export function cpuMsPer(
  a: number | undefined,
  b: number | undefined,
  units: number,
): number | undefined {
  return a === undefined || b === undefined ? undefined : round(((b - a) * 1000) / units, 3);
}

/**
 * BENCH_WORKER_NODE_OPTIONS: the same for the worker children (HTTP scenarios and throughput's
 * worker processes), e.g. `--cpu-prof --cpu-prof-dir=/tmp/workerprof`.
 */
export function workerNodeOptions(): Record<string, string> {
  const value = process.env['BENCH_WORKER_NODE_OPTIONS'];
  return value === undefined || value === '' ? {} : { NODE_OPTIONS: value };
}

/**
 * Child processes started for one stack, and the keep-alive HTTP agent its client talks to them
 * with: `stop` closes the agent's sockets, then stops the children, last started first.
 */
export function processGroup(maxSockets = 256): {
  readonly agent: Agent;
  readonly children: Child[];
  readonly stop: () => Promise<void>;
} {
  const children: Child[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets });
  return {
    agent,
    children,
    stop: async () => {
      agent.destroy();
      for (const c of children.reverse()) await c.stop();
    },
  };
}
