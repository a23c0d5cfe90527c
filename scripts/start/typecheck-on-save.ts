/**
 * The dev loop's type check (`baton dev`): Node runs agents.ts by stripping its types, so a type
 * error would otherwise surface as a failing tool at run time. After each save, the project's
 * own `npm run typecheck` (what `baton init` writes: tsc --noEmit) runs beside the reloaded
 * worker and its errors are printed. It reports, never blocks: the worker restarts either way.
 * A save during a check stops that check and starts a new one. Projects without a `typecheck`
 * script (BATON_AGENTS pointing elsewhere, `npm start` in the clone) are not checked.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Shown at most; the count says how many there were. */
const MAX_LINES = 20;

export interface TypecheckOnSave {
  /** Starts a check (stopping one under way). */
  run(): void;
  close(): void;
}

function hasTypecheckScript(cwd: string): boolean {
  try {
    const manifest = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    return typeof manifest.scripts?.['typecheck'] === 'string';
  } catch {
    return false;
  }
}

export function typecheckOnSave(
  cwd: string,
  say: (line: string) => void,
  tag: string,
): TypecheckOnSave | undefined {
  if (!hasTypecheckScript(cwd) || !existsSync(join(cwd, 'tsconfig.json'))) return undefined;
  let current: ChildProcess | undefined;
  const stop = (): void => {
    const child = current;
    current = undefined;
    // npm → sh → tsc: the whole group (detached below).
    if (child?.pid !== undefined && child.exitCode === null)
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
  };
  return {
    run() {
      stop();
      const child = spawn('npm', ['run', '-s', 'typecheck'], {
        cwd,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      current = child;
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
      child.on('error', (error) => {
        if (current === child) say(`typecheck did not start: ${error.message}`);
      });
      child.on('exit', (code) => {
        if (current !== child) return; // stopped for a newer save
        current = undefined;
        if (code === 0) return say('typecheck: no type errors');
        const lines = output.split('\n').filter((l) => l.trim() !== '');
        const errors = lines.filter((l) => /error TS\d+/.test(l)).length;
        for (const line of lines.slice(0, MAX_LINES)) process.stdout.write(`${tag} ${line}\n`);
        if (lines.length > MAX_LINES)
          process.stdout.write(`${tag} … (npm run typecheck shows all)\n`);
        say(
          `typecheck: ${errors > 0 ? `${errors} type error${errors === 1 ? '' : 's'}` : `failed (exit code ${code})`}; the worker runs the code anyway (Node only strips types)`,
        );
      });
    },
    close: stop,
  };
}
