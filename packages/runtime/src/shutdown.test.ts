/**
 * exitOnSignals' hard limit: a stop that never finishes (it waits on a Redis that is gone, say)
 * still ends the process after SIGTERM, with exit code 1 and a line that says why (issue 32
 * item 21). A real child process; nothing here is timed, the test waits for the exit.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';

const SHUTDOWN = join(dirname(fileURLToPath(import.meta.url)), 'shutdown.ts');

/** A process whose stop never resolves; prints READY once its handlers are in place. */
const SCRIPT = `
import { pino } from 'pino';
const { exitOnSignals } = await import(${JSON.stringify(SHUTDOWN)});
exitOnSignals(pino(), () => new Promise(() => undefined), 200);
setInterval(() => undefined, 1_000);
process.stdout.write('READY\\n');
`;

describe('exitOnSignals', () => {
  it(
    'exits with code 1 and says so when the stop never finishes',
    { timeout: 60_000 },
    async () => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], {
        cwd: dirname(SHUTDOWN),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const lines: string[] = [];
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      await new Promise<void>((resolve) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          lines.push(line);
          if (line === 'READY') resolve();
        });
      });
      child.kill('SIGTERM');
      expect(await exited).toBe(1);
      expect(lines.some((l) => l.includes('shutdown did not finish within 5200 ms'))).toBe(true);
    },
  );
});
