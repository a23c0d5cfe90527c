import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Integration files that take the longest (seconds on a 2-core machine, a clean clone's
 * `npm test` of 2026-11-28; the order matters, not the figures). Most of their time is waiting
 * for processes (npm start, npm pack, workers and APIs started in turn), so started last they
 * set the run's end: the first clean-clone run with 4 workers took 338 s for 954 s of files,
 * with the 83 s start-state file started at +185 s. Longest first bounds the run near the
 * files' total over the workers.
 */
export const SLOW_FILES: readonly (readonly [file: string, seconds: number])[] = [
  ['test/integration/start-state.test.ts', 83],
  ['test/integration/first-week.test.ts', 79],
  ['test/integration/sdk-pack.test.ts', 67],
  ['test/integration/init-dev.test.ts', 48],
  ['test/integration/bench-http-scenarios.test.ts', 44],
  ['test/integration/worker-idle-cost.test.ts', 38],
  ['test/integration/fairness.test.ts', 35],
  ['test/integration/schedules.test.ts', 30],
  ['test/integration/agent-routing.test.ts', 30],
  ['test/integration/worker-agent-sources.test.ts', 28],
  ['test/integration/tracing-processes.test.ts', 28],
  ['test/integration/console-admission.test.ts', 20],
  ['test/integration/api-fuzz.test.ts', 19],
  ['test/integration/cli.test.ts', 17],
];

/**
 * Where each file goes in a project's order: the known-slow files first, longest first, then the
 * rest in vitest's own order. A file vitest has timed before (its results cache) keeps vitest's
 * order among the rest; the list is the hint for a clean clone, which has no cache.
 */
export function slowFirst<T>(files: readonly T[], pathOf: (file: T) => string): T[] {
  const rank = (file: T): number => {
    const path = pathOf(file);
    const i = SLOW_FILES.findIndex(([slow]) => path.endsWith(`/${slow}`) || path === slow);
    return i === -1 ? SLOW_FILES.length : i;
  };
  // Array.prototype.sort is stable: files of the same rank keep their order.
  return files
    .map((file, i) => ({ file, i, rank: rank(file) }))
    .sort((a, b) => a.rank - b.rank || a.i - b.i)
    .map(({ file }) => file);
}

/** vitest's sequencer (projects, groupOrder, cached durations), then slowFirst within a project. */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // super.sort keeps each project's files together: reorder within each run of one project.
    const out: TestSpecification[] = [];
    let start = 0;
    for (let i = 1; i <= sorted.length; i += 1) {
      if (i === sorted.length || sorted[i]!.project.name !== sorted[start]!.project.name) {
        out.push(...slowFirst(sorted.slice(start, i), (spec) => spec.moduleId));
        start = i;
      }
    }
    return out;
  }
}
