/**
 * The run's marker and watchdog (run-processes.ts): a stand-in for vitest's main process marks
 * itself, starts the watchdog and a child in a process group of its own (as `npm start` tests
 * do); when the stand-in is killed with SIGKILL, the watchdog kills the child.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { markedProcesses, newRunMarker, sweepRunProcesses } from './run-processes.ts';

const MODULE = new URL('./run-processes.ts', import.meta.url).href;

/**
 * The stand-in: starts a child in a group of its own and a redis-server (which overwrites its
 * environment: found by its working directory), prints their pids, then waits (or, with
 * `release`, exits cleanly).
 */
function standIn(marker: string, release: boolean): ChildProcess {
  const code = `
    const { RUN_MARKER_VAR, runTempPrefix, startWatchdog } = await import(${JSON.stringify(MODULE)});
    const { spawn } = await import('node:child_process');
    const { mkdtempSync } = await import('node:fs');
    process.env[RUN_MARKER_VAR] = ${JSON.stringify(marker)};
    const dog = startWatchdog(${JSON.stringify(marker)});
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    child.unref();
    const dir = mkdtempSync(runTempPrefix('baton-redis'));
    const redis = spawn('redis-server', ['--port', '0', '--unixsocket', dir + '/s', '--save', '', '--dir', dir], { stdio: 'ignore' });
    redis.unref();
    console.log('redis ' + redis.pid + ' ' + dir);
    console.log('child ' + child.pid);
    if (${release}) { dog.release(); } else { setInterval(() => {}, 1000); }
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

interface Started {
  readonly child: number;
  readonly redis: number;
  readonly redisDir: string;
}

function started(p: ChildProcess): Promise<Started> {
  return new Promise((resolve, reject) => {
    let out = '';
    p.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const c = /child (\d+)/.exec(out);
      const r = /redis (\d+) (\S+)/.exec(out);
      if (c && r) resolve({ child: Number(c[1]), redis: Number(r[1]), redisDir: r[2]! });
    });
    p.once('exit', () => reject(new Error(`stand-in exited first: ${out}`)));
  });
}

/** Alive and not a zombie (a killed process whose parent has not reaped it yet). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

const markers: string[] = [];
afterEach(async () => {
  for (const m of markers.splice(0)) await sweepRunProcesses(m);
});

describe.skipIf(!existsSync('/proc/self/environ'))('run marker and watchdog', () => {
  it('a test run killed with SIGKILL leaves no marked process: the watchdog kills them', async () => {
    const marker = newRunMarker();
    markers.push(marker);
    const parent = standIn(marker, false);
    const { child, redis, redisDir } = await started(parent);
    expect(alive(child)).toBe(true);
    // redis-server chdirs into its --dir as it starts
    await expect
      .poll(() => markedProcesses(marker).sort(), { timeout: 10_000, interval: 100 })
      .toEqual([child, redis].sort());
    parent.kill('SIGKILL');
    await expect.poll(() => alive(child), { timeout: 15_000, interval: 100 }).toBe(false);
    await expect.poll(() => alive(redis), { timeout: 5000, interval: 100 }).toBe(false);
    expect(markedProcesses(marker)).toEqual([]);
    await expect.poll(() => existsSync(redisDir), { timeout: 5000, interval: 100 }).toBe(false);
  });

  it('a run that tears down releases the watchdog, which kills nothing; the teardown sweep does', async () => {
    const marker = newRunMarker();
    markers.push(marker);
    const parent = standIn(marker, true);
    const { child, redis, redisDir } = await started(parent);
    await new Promise((r) => parent.once('exit', r));
    // Long enough for a watchdog that (wrongly) swept on end of input.
    await new Promise((r) => setTimeout(r, 1500));
    expect(alive(child)).toBe(true);
    expect(alive(redis)).toBe(true);
    const killed = await sweepRunProcesses(marker);
    expect(killed.map((line) => Number(line.split(' ')[0])).sort()).toEqual([child, redis].sort());
    await expect.poll(() => alive(child), { timeout: 5000, interval: 100 }).toBe(false);
    rmSync(redisDir, { recursive: true, force: true });
  });
});
