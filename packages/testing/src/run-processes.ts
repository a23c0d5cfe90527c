/**
 * Every process a test run starts carries the run's marker in its environment
 * (`BATON_TEST_RUN=<id>`, set by the global set-up before any worker forks, and inherited by
 * API and worker processes, `npm start` trees, CLI children...) or, for servers that overwrite
 * their environment with a process title (redis-server, postgres), in the path of the working
 * directory they run in (runTempPrefix). The marker, not
 * a process group or a parent pid, is what finds them: tests start process groups of their own
 * (start-process.ts), and a process whose parent died is adopted by init.
 *
 * Two sweeps use it: the global teardown (anything left is a leak, killed and named), and the
 * watchdog (run-watchdog.ts), a small detached process that sweeps when vitest itself dies
 * without tearing down (kill -9, an OOM kill, a CI step timeout).
 *
 * Linux only (it reads /proc); elsewhere both sweeps do nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';

export const RUN_MARKER_VAR = 'BATON_TEST_RUN';

/** A new marker for this run: unique, so a sweep never touches another run's processes. */
export function newRunMarker(): string {
  return `${process.pid}-${randomBytes(6).toString('hex')}`;
}

interface ProcInfo {
  readonly pid: number;
  readonly ppid: number;
}

function procInfo(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid …; comm may hold spaces and parentheses.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z') return undefined; // a zombie is already dead
    return { pid, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

function hasMarker(pid: number, marker: string): boolean {
  try {
    if (
      readFileSync(`/proc/${pid}/environ`, 'latin1')
        .split('\0')
        .includes(`${RUN_MARKER_VAR}=${marker}`)
    )
      return true;
  } catch {
    // gone, or another user's
  }
  // redis-server and postgres overwrite their environment with their process title: theirs is
  // in the working directory they run in (runTempDir).
  try {
    return readlinkSync(`/proc/${pid}/cwd`).includes(marker);
  } catch {
    return false;
  }
}

/**
 * The prefix for mkdtemp of a directory a server runs in (redis-server `--dir`, a private
 * PostgreSQL's data): it carries the run's marker, so the sweeps find the server by its working
 * directory, and the watchdog removes the directory after a killed run.
 */
export function runTempPrefix(name: string): string {
  const marker = process.env[RUN_MARKER_VAR];
  return join(tmpdir(), marker === undefined || marker === '' ? `${name}-` : `${name}-${marker}-`);
}

/** Removes the temporary directories of run `marker` (after its servers were killed). */
export function removeRunTempDirs(marker: string): void {
  for (const entry of readdirSync(tmpdir())) {
    if (entry.includes(marker)) rmSync(join(tmpdir(), entry), { recursive: true, force: true });
  }
}

/** The command line of `pid`, for the report of what was left behind. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '?';
  }
}

function ancestors(): Set<number> {
  const out = new Set<number>();
  let pid = process.pid;
  while (pid > 1 && !out.has(pid)) {
    out.add(pid);
    const info = procInfo(pid);
    if (info === undefined) break;
    pid = info.ppid;
  }
  return out;
}

/**
 * Live processes carrying `marker`, except this process and its ancestors, and except what
 * `keep` spares (the teardown spares vitest's own workers, still writing coverage).
 */
export function markedProcesses(
  marker: string,
  keep: (pid: number, ppid: number) => boolean = () => false,
): number[] {
  if (!existsSync('/proc/self/environ')) return [];
  const skip = ancestors();
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (skip.has(pid)) continue;
    const info = procInfo(pid);
    if (info === undefined || !hasMarker(pid, marker) || keep(pid, info.ppid)) continue;
    found.push(pid);
  }
  return found;
}

/**
 * SIGKILLs every process carrying `marker` (see markedProcesses), again until none is left (a
 * supervisor may start a child while its siblings die) or `timeoutMs` passed. Returns what it
 * killed, with command lines.
 */
export async function sweepRunProcesses(
  marker: string,
  opts: { keep?: (pid: number, ppid: number) => boolean; timeoutMs?: number } = {},
): Promise<string[]> {
  const killed = new Map<number, string>();
  const deadline = Date.now() + (opts.timeoutMs ?? 5000);
  for (;;) {
    const left = markedProcesses(marker, opts.keep);
    if (left.length === 0 || Date.now() > deadline) break;
    for (const pid of left) {
      if (!killed.has(pid)) killed.set(pid, commandLine(pid));
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return [...killed].map(([pid, cmd]) => `${pid} ${cmd}`);
}

export interface Watchdog {
  /** Tells the watchdog the run ended cleanly: it exits without sweeping. */
  release(): void;
}

/**
 * Starts run-watchdog.ts in a session of its own (a Ctrl-C or a kill of vitest's group does not
 * reach it), reading a pipe from this process: end of file without a "done" line means this
 * process died, and the watchdog sweeps `marker`.
 */
export function startWatchdog(marker: string): Watchdog {
  if (!existsSync('/proc/self/environ')) return { release: () => undefined };
  const script = new URL('./run-watchdog.ts', import.meta.url).pathname;
  // Without the marker itself: the teardown's sweep must not kill it.
  const env = { ...process.env };
  delete env[RUN_MARKER_VAR];
  const child: ChildProcess = spawn(process.execPath, [script, marker], {
    env,
    detached: true,
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  child.unref();
  // The pipe must not keep vitest alive once its work is done.
  (child.stdin as unknown as Socket | null)?.unref();
  child.stdin?.on('error', () => undefined); // the watchdog gone first: nothing to tell it
  return {
    release() {
      child.stdin?.end('done\n');
    },
  };
}
