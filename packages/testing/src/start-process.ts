/**
 * `npm start` (scripts/start.ts) or `baton dev` as a user runs them: a process whose output
 * lines a test waits on, whose API and worker children it can find and kill, stopped with
 * SIGTERM (as Ctrl-C would) at the end.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';

export interface StartProcess {
  readonly child: ChildProcess;
  /** Every line printed so far (stdout and stderr, colour-free). */
  readonly lines: string[];
  /** The first line at or after `from` (an index into lines) matching `re`. */
  waitForLine(re: RegExp, opts?: { from?: number; timeoutMs?: number }): Promise<RegExpExecArray>;
  /** Pids of the descendants whose command line contains `needle` (e.g. the worker's main.ts). */
  descendants(needle: string): number[];
  /** SIGTERM, then SIGKILL after 20 s; resolves with the exit code. */
  stop(): Promise<number | null>;
}

function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
  } catch {
    return []; // ps exits 1 when there are none
  }
}

function commandLine(pid: number): string {
  try {
    return execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' });
  } catch {
    return '';
  }
}

export function startProcess(
  command: string,
  args: readonly string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): StartProcess {
  const child = spawn(command, [...args], {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let buffered = { out: '', err: '' };
  const take = (which: 'out' | 'err', chunk: Buffer): void => {
    const text = buffered[which] + chunk.toString('utf8');
    const parts = text.split('\n');
    buffered = { ...buffered, [which]: parts.pop() ?? '' };
    // eslint-disable-next-line no-control-regex
    for (const line of parts) lines.push(line.replace(/\x1b\[[0-9;]*m/g, ''));
    for (const wake of waiters) wake();
  };
  child.stdout.on('data', (c: Buffer) => take('out', c));
  child.stderr.on('data', (c: Buffer) => take('err', c));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  child.once('exit', () => {
    for (const wake of waiters) wake();
  });

  return {
    child,
    lines,
    waitForLine(re, { from = 0, timeoutMs = 60_000 } = {}) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          for (let i = from; i < lines.length; i += 1) {
            const match = re.exec(lines[i]!);
            if (match) {
              done();
              resolve(match);
              return;
            }
          }
          if (child.exitCode !== null || child.signalCode !== null) {
            done();
            reject(new Error(`exited before printing ${re}; output:\n${lines.join('\n')}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`no line matched ${re} in ${timeoutMs} ms; output:\n${lines.join('\n')}`),
          );
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    descendants(needle) {
      const found: number[] = [];
      const visit = (pid: number): void => {
        for (const c of childrenOf(pid)) {
          if (commandLine(c).includes(needle)) found.push(c);
          visit(c);
        }
      };
      if (child.pid !== undefined) visit(child.pid);
      return found;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        const code = await exited;
        clearTimeout(timer);
        return code;
      }
      return exited;
    },
  };
}
