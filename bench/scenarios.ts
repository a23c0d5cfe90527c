/**
 * The scenario registry. To add one (e.g. bench/latency.ts): export a `Scenario` (bench/lib.ts)
 * from its own file and list it here. Scenarios run in this order; a scenario can read the
 * results of earlier ones through `ctx.results` (e.g. to print a ratio against them).
 */
import type { Scenario } from './lib.ts';
import { throughput } from './throughput.ts';
import { inProcess } from './in-process.ts';
import { latency } from './latency.ts';
import { apiThroughput } from './api-throughput.ts';
import { decisionLatency } from './decision-latency.ts';
import { waitingRunsScenario } from './waiting-runs.ts';
import { threadGrowth } from './thread-growth.ts';
import { streaming } from './streaming.ts';
import { sseFanout } from './sse-fanout.ts';
import { budgets } from './budgets.ts';
import { cluster } from './cluster.ts';
import { fairness } from './fairness.ts';
import { archive } from './archive.ts';
import { cliStart } from './cli-start.ts';
import { timers } from './timers.ts';

export const scenarios: readonly Scenario[] = [
  throughput,
  inProcess,
  latency,
  apiThroughput,
  decisionLatency,
  waitingRunsScenario,
  threadGrowth,
  streaming,
  sseFanout,
  cluster,
  fairness,
  archive,
  cliStart,
  timers,
  budgets,
];
