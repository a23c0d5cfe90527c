/**
 * Scenario "in-process": the 'bench' agent through packages/core's InProcessRunner (in-memory
 * stores, no Redis, no queues), same number of runs as the throughput scenario, all started at
 * once. This is the engine's own cost per step: the floor the distributed runtime (and the
 * later latency benches) are compared against.
 */
import { performance } from 'node:perf_hooks';
import { InProcessRunner } from '@baton/core';
import type { Checkpoint } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { benchAgents } from '@baton/testing/bench-agents';
import { BenchError, envInt, round, withTimeout, type Scenario } from './lib.ts';

const AGENT = 'bench';

async function runAll(
  runner: InProcessRunner,
  n: number,
  label: string,
): Promise<{ checkpoints: Checkpoint[]; elapsedMs: number }> {
  const started = performance.now();
  const handles = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      runner.start({ agent: AGENT, input: [{ role: 'user', content: `bench ${label} ${i}` }] }),
    ),
  );
  const checkpoints = await Promise.all(handles.map((h) => h.finished));
  return { checkpoints, elapsedMs: performance.now() - started };
}

export const inProcess: Scenario = {
  name: 'in-process',
  description:
    "the bench agent through core's InProcessRunner (no Redis): the engine's own steps/s",
  needsRedis: false,
  async run(ctx) {
    const runs = envInt('BENCH_RUNS', 300, 1);
    const warmupRuns = envInt('BENCH_WARMUP_RUNS', 40, 0);
    const timeoutMs = envInt('BENCH_TIMEOUT_MS', 120_000, 1000);
    // A fresh runner per batch: the in-memory store keeps every run, so reuse would grow memory.
    const fresh = (): InProcessRunner =>
      new InProcessRunner({ agents: benchAgents(systemClock), clock: systemClock });
    if (warmupRuns > 0) {
      ctx.log(`in-process: warm-up ${warmupRuns} runs`);
      await withTimeout(
        runAll(fresh(), warmupRuns, 'warm-up'),
        timeoutMs,
        'in-process warm-up runs to finish',
      );
    }
    ctx.log(`in-process: ${runs} runs`);
    const cpu0 = process.cpuUsage();
    const { checkpoints, elapsedMs } = await withTimeout(
      runAll(fresh(), runs, 'measured'),
      timeoutMs,
      'in-process runs to finish',
    );
    const cpu = process.cpuUsage(cpu0);
    const bad = checkpoints.filter(
      (cp) => cp.status !== 'done' || cp.termination?.kind !== 'natural_end',
    );
    if (bad.length > 0)
      throw new BenchError(
        `in-process: ${bad.length} of ${runs} runs did not finish naturally (e.g. ${JSON.stringify(bad[0]?.termination)})`,
      );
    const steps = checkpoints.reduce(
      (n, cp) => n + cp.messages.filter((m) => m.role === 'assistant').length,
      0,
    );
    const stepsPerSec = (steps / elapsedMs) * 1000;
    ctx.log(`in-process: ${round(stepsPerSec, 0)} steps/s`);
    const result: Record<string, unknown> = {
      runs,
      steps,
      elapsedMs: round(elapsedMs, 1),
      runsPerSec: round((runs / elapsedMs) * 1000, 1),
      stepsPerSec: round(stepsPerSec, 1),
      cpuUsecPerStep: round((cpu.user + cpu.system) / steps, 1),
    };
    // Next to the distributed number when the throughput scenario ran first.
    const tp = ctx.results['throughput'] as
      { baton?: { workers: string; stepsPerSec: number }[] } | undefined;
    if (tp?.baton) {
      result['vsDistributed'] = tp.baton.map((b) => ({
        workers: b.workers,
        distributedStepsPerSec: b.stepsPerSec,
        inProcessStepsPerSec: round(stepsPerSec, 1),
        distributedOverInProcess: round(b.stepsPerSec / stepsPerSec, 4),
        inProcessSpeedup: round(stepsPerSec / b.stepsPerSec, 1),
      }));
    }
    return result;
  },
};
