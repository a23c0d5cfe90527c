/** Runs `npm run bench` (bench/run.ts) for the given scenarios as a child process. */
import { spawn } from 'node:child_process';

const ROOT = new URL('../../../', import.meta.url);

export interface BenchRun {
  readonly code: number | null;
  /** The JSON report (stdout). */
  readonly out: string;
  /** Progress and errors (stderr). */
  readonly err: string;
}

export function runBench(
  scenarios: readonly string[],
  env: Record<string, string>,
): Promise<BenchRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bench/run.ts', `--scenario=${scenarios.join(',')}`], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code) => resolve({ code, out, err }));
  });
}
