/**
 * The issue-11 budgets in one table, from the scenarios that ran before it: the per-step ones of
 * `throughput`, the API CPU per run of `api-throughput`, and the bytes per commit of
 * `thread-growth`. A budget whose scenario did not run shows `measured: null`.
 */
import type { Scenario } from './lib.ts';
import { budgetCheck, round } from './lib.ts';

type Json = Record<string, unknown>;

function at(value: unknown, ...path: (string | number)[]): unknown {
  let v = value;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[p];
  }
  return v;
}

export const budgets: Scenario = {
  name: 'budgets',
  description: 'the issue-11 budgets from the scenarios that ran before it (run it last)',
  needsRedis: false,
  run(ctx) {
    const perStep = (at(ctx.results, 'throughput', 'budgets') ?? {}) as Json;
    const rows = (at(ctx.results, 'thread-growth', 'byLength') ?? []) as Json[];
    const row = (length: number): Json | undefined => rows.find((r) => r['length'] === length);
    const commit200 = row(200)?.['bytesPerCommitMean'];
    const commit0 = row(0)?.['bytesPerCommitMean'];
    const table: Json = {
      ...Object.fromEntries(Object.entries(perStep).filter(([key]) => key !== 'note')),
      apiCpuMsPerRun: budgetCheck(
        at(ctx.results, 'api-throughput', 'bench', 'cpuMsPerRun', 'api'),
        1.5,
      ),
      bytesPerCommitAt200Messages: budgetCheck(commit200, 2048),
      bytesPerCommit200Over0: budgetCheck(
        typeof commit200 === 'number' && typeof commit0 === 'number' && commit0 > 0
          ? round(commit200 / commit0, 2)
          : undefined,
        1.2,
      ),
    };
    const unmet = Object.entries(table)
      .filter(([, v]) => (v as Json)['met'] === false)
      .map(([key]) => key);
    return Promise.resolve({ budgets: table, unmet });
  },
};
