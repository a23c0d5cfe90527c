/**
 * The test run's watchdog (run-processes.ts starts it): `node run-watchdog.ts <marker>`, stdin a
 * pipe from vitest's main process. A "done" line means the run tore down by itself; end of file
 * without it means vitest died (kill -9, OOM, a CI timeout), and every process carrying the
 * run's marker is killed, so no redis-server, API or worker outlives the run.
 */
import { removeRunTempDirs, sweepRunProcesses } from './run-processes.ts';

const marker = process.argv[2];
if (marker === undefined || marker === '') {
  process.stderr.write('run-watchdog: no marker given\n');
  process.exit(2);
}

let released = false;
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  input += chunk;
  if (input.split('\n').includes('done')) released = true;
});
process.stdin.on('close', () => void finish());
process.stdin.on('error', () => void finish());

async function finish(): Promise<void> {
  if (!released) {
    // Give vitest's own workers a moment to notice their parent is gone and exit by themselves.
    await new Promise((r) => setTimeout(r, 500));
    const killed = await sweepRunProcesses(marker!, { timeoutMs: 10_000 });
    removeRunTempDirs(marker!);
    if (killed.length > 0)
      process.stderr.write(
        `[baton tests] watchdog: the test run died; killed ${killed.length} process(es) it left:\n  ${killed.join('\n  ')}\n`,
      );
  }
  process.exit(0);
}
