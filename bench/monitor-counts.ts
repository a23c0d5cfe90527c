/**
 * Exact round trips and commands of a piece of work under MONITOR, split into a system's own
 * connections and its BullMQ connections (job-model-floor.ts and throughput's raw baseline).
 */
import type { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { bullClientOf } from '@baton/runtime/internal';
import { round, startMonitor } from './lib.ts';

/**
 * The addresses of a Queue's and a Worker's shared connections (BullMQ leaves them unnamed; the
 * Worker's blocking connection is named after the prefix and queue).
 */
export async function bullmqAddrs(queue: Queue, worker: Worker): Promise<Set<string>> {
  return new Set([localAddr(await bullClientOf(queue)), localAddr(await bullClientOf(worker))]);
}

/** host:port of a client's socket (how MONITOR names it). */
export function localAddr(client: unknown): string {
  const stream = (client as { stream?: { localAddress?: string; localPort?: number } }).stream;
  return `${stream?.localAddress ?? '127.0.0.1'}:${stream?.localPort ?? 0}`;
}

export interface MonitorCounts {
  /** Commands sent by clients (round trips), and those run inside their scripts. */
  readonly own: { roundTrips: number; commands: number };
  readonly other: { roundTrips: number; commands: number };
}

/**
 * The connections of a Redis by address, with their CLIENT LIST names: `who` says which are the
 * system's own (its store), which are its BullMQ connections ('other') and which are not the
 * system's at all (null: the bench's, other harnesses' idle workers).
 */
export async function classifyClients(
  bench: Redis,
  who: (addr: string, name: string) => 'own' | 'other' | null,
): Promise<Map<string, 'own' | 'other'>> {
  const out = new Map<string, 'own' | 'other'>();
  for (const line of ((await bench.client('LIST')) as string).split('\n')) {
    const addr = /\baddr=(\S+)/.exec(line)?.[1];
    const name = /\bname=(\S*)/.exec(line)?.[1] ?? '';
    const kind = addr === undefined ? null : who(addr, name);
    if (addr !== undefined && kind !== null) out.set(addr, kind);
  }
  return out;
}

/**
 * Every command of `work` under MONITOR from the connections in `clients` (a script's commands
 * go with the client that ran it: MONITOR prints them right after it).
 */
export async function monitorCounts(
  url: string,
  clients: ReadonlyMap<string, 'own' | 'other'>,
  work: () => Promise<void>,
): Promise<MonitorCounts> {
  const counts = { own: { roundTrips: 0, commands: 0 }, other: { roundTrips: 0, commands: 0 } };
  let last: keyof typeof counts | null = null;
  const monitor = await startMonitor(url, ({ source, args }) => {
    if (source === 'lua') {
      if (last !== null) counts[last].commands += 1;
      return;
    }
    const kind = clients.get(source);
    last = kind ?? null;
    if (kind === undefined) return;
    const cmd = (args[0] ?? '').toLowerCase();
    if (cmd === 'monitor' || cmd === 'info' || cmd === 'client') return;
    counts[kind].roundTrips += 1;
    counts[kind].commands += 1;
  });
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 200)); // the last MONITOR lines
  } finally {
    await monitor.stop();
  }
  return counts;
}

/** MONITOR counts per unit (step or job): own, other (BullMQ) and total. */
export function perUnit(counts: MonitorCounts, units: number): Record<string, unknown> {
  const per = (n: number): number => round(n / units);
  return {
    units,
    own: { roundTrips: per(counts.own.roundTrips), commands: per(counts.own.commands) },
    bullmq: { roundTrips: per(counts.other.roundTrips), commands: per(counts.other.commands) },
    total: {
      roundTrips: per(counts.own.roundTrips + counts.other.roundTrips),
      commands: per(counts.own.commands + counts.other.commands),
    },
  };
}
