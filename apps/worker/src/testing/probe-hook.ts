import { setTimeout as delay } from 'node:timers/promises';
import type { WorkerDeps } from '../worker-deps.ts';

/**
 * Test hook, off unless BATON_PROBES=1: the worker announces named points on stdout and may pause
 * there (BATON_PROBE_PAUSE="before-tool:5000"), so a crash test can kill the process at an exact
 * moment. Production deployments never set these variables.
 */
export function probeFromEnv(env: Record<string, string | undefined>): WorkerDeps['probe'] {
  if (env['BATON_PROBES'] !== '1') return undefined;
  const pauses = new Map(
    (env['BATON_PROBE_PAUSE'] ?? '')
      .split(',')
      .filter(Boolean)
      .map((p) => {
        const [point, ms] = p.split(':');
        return [point ?? '', Number(ms ?? 0)] as const;
      }),
  );
  return async (point, info) => {
    process.stdout.write(`PROBE ${JSON.stringify({ point, ...info })}\n`);
    const ms = pauses.get(point);
    if (ms) await delay(ms);
  };
}
