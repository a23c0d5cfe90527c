/**
 * `npm start` (scripts/start.ts) or `npm run dev` as a user runs them: a process whose output
 * lines a test waits on, whose API and worker children it can find and kill. It runs in a
 * process group of its own, stopped as a terminal's Ctrl-C would: a signal to every process of
 * the group (npm's `sh` passes none on), then waiting until none is left, so no API, worker or
 * Redis outlives the test.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface StartProcess {
  readonly child: ChildProcess;
  /** Every line printed so far (stdout and stderr, colour-free). */
  readonly lines: string[];
  /** The first line at or after `from` (an index into lines) matching `re`. */
  waitForLine(re: RegExp, opts?: { from?: number; timeoutMs?: number }): Promise<RegExpExecArray>;
  /** Pids of the descendants whose command line contains `needle` (e.g. the worker's main.ts). */
  descendants(needle: string): number[];
  /** SIGTERM to the group, SIGKILL to what is left after 30 s; resolves when the group is empty. */
  stop(): Promise<void>;
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
    detached: true,
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
      const group = child.pid;
      if (group === undefined) return;
      const signal = (sig: NodeJS.Signals): void => {
        try {
          process.kill(-group, sig);
        } catch {
          // the group is empty
        }
      };
      signal('SIGTERM');
      const deadline = Date.now() + 30_000;
      while (groupAlive(group)) {
        if (Date.now() > deadline) signal('SIGKILL');
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** A live (not zombie) process is in the group: read from /proc, as orphans' zombies may stay. */
function groupAlive(group: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === group && state !== 'Z') return true;
  }
  return false;
}
