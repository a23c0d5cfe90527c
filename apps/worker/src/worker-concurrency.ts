import { getHeapStatistics } from 'node:v8';

/**
 * WORKER_CONCURRENCY's default, sized for model I/O: a step spends most of its time waiting on
 * the model's stream, so a worker process serves hundreds of them at once, bounded by what they
 * cost, not by a CPU-sized few. Both costs below were measured by the `streaming` bench's
 * concurrent case (bench/streaming-concurrent.ts: 200 one-round bench-streaming runs, 200 deltas
 * 10 ms apart, all in flight on one worker process at once; see bench/README.md).
 */

/**
 * Memory one in-flight step costs: the worker's peak RSS minus its idle RSS over the 200 steps
 * in flight was 523-531 KB per step (run state, the model call, buffered deltas, the BullMQ job
 * and its lock renewals), rounded up.
 */
export const MEASURED_BYTES_PER_IN_FLIGHT_STEP = 512 * 1024 + 64 * 1024;

/** Share of the process's V8 heap limit the default lets in-flight steps take. */
const HEAP_SHARE = 0.25;

/**
 * The CPU bound: those 200 steps took 0.82 s of worker CPU over a 2 s stream (≈ 4 ms per step of
 * 200 deltas), i.e. ≈ 40 % of one core; 256 of them stay near half a core, leaving the rest of
 * the event loop's time to commits, lock renewals and deltas of other shapes. Past it, add
 * worker processes rather than steps to one.
 */
const CPU_BOUND = 256;
/** The old fixed default: never fewer, whatever the heap. */
const MIN_DEFAULT = 16;

/**
 * In-flight steps that a quarter of this process's V8 heap limit holds at the measured memory per
 * step, at most CPU_BOUND and at least 16. With Node's default heap limit on a 64-bit machine
 * with ≥ 16 GiB (≈ 4 GiB) memory allows ≈ 1,900, so the CPU bound, 256, is the default; a process
 * whose heap limit is 256 MiB gets 113.
 */
export function defaultWorkerConcurrency(
  heapLimitBytes: number = getHeapStatistics().heap_size_limit,
): number {
  const fits = Math.floor((heapLimitBytes * HEAP_SHARE) / MEASURED_BYTES_PER_IN_FLIGHT_STEP);
  return Math.max(MIN_DEFAULT, Math.min(CPU_BOUND, fits));
}
