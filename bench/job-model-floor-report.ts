/**
 * The throughput scenario's `jobModelFloor` section: raw BullMQ, the job model's floor
 * (job-model-floor.ts) and Baton, per step, from samples taken in turn in the same window, each
 * CPU figure a median of per-triple ratios to the raw job of its own triple.
 */
import { round } from './lib.ts';

type Json = Record<string, unknown>;

function at(value: unknown, ...path: string[]): number | undefined {
  let v = value;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Json)[p];
  }
  return typeof v === 'number' ? v : undefined;
}

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? null;
}

/** Median over the triples of f(triple), skipping triples where it is undefined. */
function med(
  pairs: readonly Triple[],
  f: (p: Triple) => number | undefined,
  digits = 2,
): number | null {
  const m = median(pairs.map(f).filter((x): x is number => x !== undefined && Number.isFinite(x)));
  return m === null ? null : round(m, digits);
}

interface Triple {
  readonly raw: Json;
  readonly baton: Json;
  readonly floor?: Json;
}

const BUDGETS = { ownCommands: 35, ownRoundTrips: 6, redisCpu: 3.5, workerCpu: 4.5 };

export function floorReport(input: {
  pairs: readonly Triple[];
  rawProfile: Json | undefined;
  floorProfile: Json | undefined;
  batonProfile: Json | undefined;
  batonJobsPerRun: unknown;
  holderNote: boolean;
}): Json {
  const { pairs, rawProfile, floorProfile, batonProfile } = input;
  const over = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined || b === undefined || b === 0 ? undefined : a / b;
  const rawRedis = (p: Triple): number | undefined =>
    at(p.raw, 'redisPerJob', 'redisCpuUsecPerUnit');
  const rawNode = (p: Triple): number | undefined => at(p.raw, 'nodeCpuUsecPerJob');
  const rawRate = (p: Triple): number | undefined => at(p.raw, 'jobsPerSec');
  const floor = {
    commands: med(pairs, (p) => at(p.floor, 'redisPerStep', 'commandsPerUnit')),
    ownCommands: at(floorProfile, 'own', 'commands') ?? null,
    bullmqCommands: at(floorProfile, 'bullmq', 'commands') ?? null,
    roundTrips: at(floorProfile, 'total', 'roundTrips') ?? null,
    ownRoundTrips: at(floorProfile, 'own', 'roundTrips') ?? null,
    bullmqRoundTrips: at(floorProfile, 'bullmq', 'roundTrips') ?? null,
    redisCpuOverRawJob: med(pairs, (p) =>
      over(at(p.floor, 'redisPerStep', 'redisCpuUsecPerUnit'), rawRedis(p)),
    ),
    workerCpuOverRawJob: med(pairs, (p) => over(at(p.floor, 'nodeCpuUsecPerStep'), rawNode(p))),
    stepsPerSecOverRawJobsPerSec: med(
      pairs,
      (p) => over(at(p.floor, 'stepsPerSec'), rawRate(p)),
      3,
    ),
    bytesToRedis: med(pairs, (p) => at(p.floor, 'redisPerStep', 'bytesToRedisPerUnit'), 0),
    samplesStepsPerSec: pairs.map((p) => at(p.floor, 'stepsPerSec') ?? null),
    perTriple: {
      redisCpuOverRawJob: pairs.map((p) =>
        round(over(at(p.floor, 'redisPerStep', 'redisCpuUsecPerUnit'), rawRedis(p)) ?? NaN),
      ),
      workerCpuOverRawJob: pairs.map((p) =>
        round(over(at(p.floor, 'nodeCpuUsecPerStep'), rawNode(p)) ?? NaN),
      ),
      stepsPerSecOverRawJobsPerSec: pairs.map((p) =>
        round(over(at(p.floor, 'stepsPerSec'), rawRate(p)) ?? NaN, 3),
      ),
    },
  };
  const baton = {
    commands: med(pairs, (p) => at(p.baton, 'redisPerStep', 'commandsPerUnit')),
    ownCommands: at(batonProfile, 'perStepByOrigin', 'baton', 'commands') ?? null,
    bullmqCommands: at(batonProfile, 'perStepByOrigin', 'bullmq', 'commands') ?? null,
    roundTrips: at(batonProfile, 'clientRoundTripsPerStep') ?? null,
    ownRoundTrips: at(batonProfile, 'perStepByOrigin', 'baton', 'roundTrips') ?? null,
    bullmqRoundTrips: at(batonProfile, 'perStepByOrigin', 'bullmq', 'roundTrips') ?? null,
    redisCpuOverRawJob: med(pairs, (p) =>
      over(at(p.baton, 'redisPerStep', 'redisCpuUsecPerUnit'), rawRedis(p)),
    ),
    workerCpuOverRawJob: med(pairs, (p) =>
      over(at(p.baton, 'benchProcess', 'cpuUsecPerStep'), rawNode(p)),
    ),
    stepsPerSecOverRawJobsPerSec: med(
      pairs,
      (p) => over(at(p.baton, 'stepsPerSec'), rawRate(p)),
      3,
    ),
    bytesToRedis: med(pairs, (p) => at(p.baton, 'redisPerStep', 'bytesToRedisPerUnit'), 0),
    perTriple: {
      redisCpuOverRawJob: pairs.map((p) =>
        round(over(at(p.baton, 'redisPerStep', 'redisCpuUsecPerUnit'), rawRedis(p)) ?? NaN),
      ),
      workerCpuOverRawJob: pairs.map((p) =>
        round(over(at(p.baton, 'benchProcess', 'cpuUsecPerStep'), rawNode(p)) ?? NaN),
      ),
    },
  };
  const raw = {
    commandsPerJob: med(pairs, (p) => at(p.raw, 'redisPerJob', 'commandsPerUnit')),
    roundTripsPerJob: at(rawProfile, 'total', 'roundTrips') ?? null,
    redisCpuUsecPerJob: med(pairs, rawRedis, 1),
    workerCpuUsecPerJob: med(pairs, rawNode, 1),
    jobsPerSec: med(pairs, rawRate, 1),
  };
  const check = (v: number | null, max: number): Json => ({
    floor: v,
    max,
    floorWithin: v === null ? null : v <= max,
  });
  const minus = (a: number | null, b: number | null): number | null =>
    a === null || b === null ? null : round(a - b, 2);
  return {
    why: "the job model with only the durable writes a correct design must make (bench/job-model-floor.ts): Baton's BullMQ jobs and options for the bench agent (1 step job activated 3 times, 2 tool children in each of its first 2 rounds), run create, per activation a lease acquire + load, per durable transition a fenced commit (2 per step: before the model call, after it), a lease release before waiting for children, per tool job a checkpoint read and a result record; each one round trip, payloads of Baton's sizes. Not in it: holder notes (unless BENCH_FLOOR_HOLDER_NOTE=1), thread acquire/history/release, run indexes, fairness, the delta append. A budget the floor exceeds cannot be met under this job model.",
    triples: pairs.length,
    holderNotes: input.holderNote
      ? "included (BENCH_FLOOR_HOLDER_NOTE=1): one per job activation, as Baton's stall accounting"
      : 'not included (BENCH_FLOOR_HOLDER_NOTE=1 adds them)',
    jobsPerRun: { floor: { step: 1, tool: 4 }, baton: input.batonJobsPerRun ?? null },
    perStep: { rawPerJob: raw, floor, baton },
    budgets: {
      ownRedisCommandsPerStep: check(floor.ownCommands, BUDGETS.ownCommands),
      ownClientRoundTripsPerStep: check(floor.ownRoundTrips, BUDGETS.ownRoundTrips),
      redisCpuPerStepOverRawJob: check(floor.redisCpuOverRawJob, BUDGETS.redisCpu),
      workerCpuPerStepOverRawJob: check(floor.workerCpuOverRawJob, BUDGETS.workerCpu),
    },
    batonOverFloor: {
      ownCommands: minus(baton.ownCommands, floor.ownCommands),
      ownRoundTrips: minus(baton.ownRoundTrips, floor.ownRoundTrips),
      bullmqCommands: minus(baton.bullmqCommands, floor.bullmqCommands),
      bullmqRoundTrips: minus(baton.bullmqRoundTrips, floor.bullmqRoundTrips),
      redisCpuOverRawJob: minus(baton.redisCpuOverRawJob, floor.redisCpuOverRawJob),
      workerCpuOverRawJob: minus(baton.workerCpuOverRawJob, floor.workerCpuOverRawJob),
    },
  };
}
