import { Cluster } from 'ioredis';
import { UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { type RedisClient } from '@baton/runtime';
import {
  JOB_DEATHS_FIELD,
  JOB_HOLDER_FIELD,
  JOB_STALLS_FIELD,
  STALLED_TOO_OFTEN,
  defineScript,
  jobHashKeyOf,
  type HolderNote,
  type BatonKeys,
  type LuaScript,
} from '@baton/runtime/internal';

/**
 * Notes who runs this attempt of a job, and tells what the job's record said before: the stall
 * count (BullMQ's `stc`) at the previous attempt, who ran that attempt, and the deaths counted
 * so far. Kept in the job's own hash (Baton's fields there: internals/bullmq/job-hash.ts), so it
 * goes with the job; a job that is gone is left alone.
 * KEYS: job hash   ARGV: holder, stalledCounter
 * Reply: {stallsSeen|'', holder|'', deaths|'0'} | false (no such job)
 */
const HOLDER_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local prev = redis.call('HMGET', KEYS[1], '${JOB_STALLS_FIELD}', '${JOB_HOLDER_FIELD}', '${JOB_DEATHS_FIELD}')
redis.call('HSET', KEYS[1], '${JOB_STALLS_FIELD}', ARGV[2], '${JOB_HOLDER_FIELD}', ARGV[1])
return {prev[1] or '', prev[2] or '', prev[3] or '0'}`;

/**
 * HOLDER_LUA without the read: the note an attempt of a job that never lost a worker leaves (it
 * has no previous attempt to ask about).
 * KEYS: job hash   ARGV: holder, stalledCounter   Reply: 1 noted | 0 no such job
 */
const NOTE_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], '${JOB_STALLS_FIELD}', ARGV[2], '${JOB_HOLDER_FIELD}', ARGV[1])
return 1`;

type NoteScript = LuaScript<[job: string], [holder: string, stalledCounter: number], number>;

type HolderScript = LuaScript<
  [job: string],
  [holder: string, stalledCounter: number],
  [string, string, string] | null
>;

/** The Redis client name of a worker's control connection: how others see it is connected. */
export function controlConnectionName(workerId: string): string {
  // Client names take no spaces or control characters; worker ids are the operator's to choose.
  return `baton-control:${workerId.replace(/[^\x21-\x7e]/g, '_')}`;
}

/**
 * Which lost locks count as deaths toward MAX_STALLS. BullMQ counts every lock its holder did not
 * renew in time: a worker that is alive but was slow (a busy host, an event loop blocked for a
 * few seconds, a process paused and resumed) counts like one that died, and enough of those give
 * up a job, and fail a tool call, that nothing was wrong with. So Baton keeps its own count: when
 * a job comes back after a lost lock, the worker that held it is asked whether it is alive, and
 * only a dead one counts. Only an attempt that started counts at all: a job a worker fetched but
 * held in its process gate behind others never ran, and its worker's death (caused by another
 * job) is a requeue for it. Dead: its control connection to Redis is gone (the kernel closes the
 * sockets of a process that died, at once) or its heartbeat expired (AGENT_HEARTBEAT_TTL_MS: a
 * host that vanished, or a worker hung for that long). BullMQ's own limit stays as a backstop,
 * well above MAX_STALLS, for a job that keeps every live worker from renewing its lock, and for
 * one requeued without end.
 */
export class StallAccounting {
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly holder: string;
  private readonly maxStalls: number;
  private readonly logger: Logger;
  private readonly record: HolderScript;
  private readonly note: NoteScript;
  /**
   * On a single Redis a first attempt's note rides with the first script the attempt sends (the
   * lease acquire of a step job, the checkpoint read of a tool job): admit hands it to the
   * caller instead of a round trip of its own. A Cluster keeps the job's hash in its queue's
   * slot, never the run's, so there the note is its own script.
   */
  private readonly noteWithCaller: boolean;
  private warned = false;

  constructor(opts: {
    redis: RedisClient;
    keys: BatonKeys;
    /** This worker's id (its heartbeat member and control connection name). */
    workerId: string;
    maxStalls: number;
    logger: Logger;
  }) {
    this.redis = opts.redis;
    this.keys = opts.keys;
    this.holder = opts.workerId;
    this.maxStalls = opts.maxStalls;
    this.logger = opts.logger;
    this.record = defineScript(opts.redis, 'batonJobHolder', 1, HOLDER_LUA);
    this.note = defineScript(opts.redis, 'batonJobHolderNote', 1, NOTE_LUA);
    this.noteWithCaller = !(opts.redis instanceof Cluster);
  }

  /** BullMQ's own stall limit: a backstop only (see the class comment). */
  static bullBackstop(maxStalls: number): number {
    return Math.max(50, maxStalls * 10);
  }

  /**
   * Called as an attempt of `job` (of `agent`'s queues) starts. Throws BullMQ's UnrecoverableError
   * with STALLED_TOO_OFTEN when the workers running it died more than MAX_STALLS times: the job is
   * given up as BullMQ would have, with the same reason (see job-failures.ts, fan-out.ts).
   * Returns the attempt's holder note when the caller is to write it with the first script it
   * sends (see noteWithCaller): the job processors do so before any other work of the attempt.
   */
  async admit(job: Job): Promise<HolderNote | null> {
    const key = jobHashKeyOf(job);
    const stalls = job.stalledCounter;
    if (stalls === 0) {
      // Never lost a worker: only the note is needed (for the next attempt, should there be one).
      if (this.noteWithCaller) return { key, holder: this.holder, stalledCounter: stalls };
      this.note([key], [this.holder, stalls]).catch((err: unknown) =>
        this.logger.warn({ err }, 'could not note a job holder'),
      );
      return null;
    }
    const reply = await this.record([key], [this.holder, stalls]);
    if (!reply) return null;
    const [seenText, previous, deathsText] = reply;
    const seen = seenText === '' ? 0 : Number(seenText);
    if (stalls <= seen) return null; // no lock was lost since the last attempt
    // The attempt noted last (at stall count `seen`) lost its lock: a death if its worker is
    // dead. Every other lost lock is an attempt that noted no holder: it never started (held in
    // its worker's process gate behind other jobs, or fetched by a worker that died at once),
    // so it is a requeue, not a death, whatever killed its worker: the innocent jobs a crash
    // loop held must not be given up with the job that kills. BullMQ's own limit (bullBackstop)
    // bounds the requeues. (A first attempt's note is not awaited: a job that killed its worker
    // before that note landed counts one death fewer.)
    const died = previous !== '' && !(await this.alive(previous)) ? 1 : 0;
    const requeues = stalls - seen - died;
    let deaths = Number(deathsText);
    if (died > 0) deaths = await this.redis.hincrby(key, JOB_DEATHS_FIELD, died);
    // Counted from now on, at 0: a job BullMQ's backstop gives up then says no worker died.
    else if (deathsText === '0') await this.redis.hsetnx(key, JOB_DEATHS_FIELD, 0);
    if (requeues > 0)
      this.logger.info(
        { jobId: job.id, holder: previous, requeues },
        previous !== '' && died === 0
          ? 'lock lost by a live worker, or by an attempt that had not started'
          : 'lock lost by an attempt that had not started',
      );
    if (deaths > this.maxStalls) throw new UnrecoverableError(STALLED_TOO_OFTEN);
    return null;
  }

  private async alive(workerId: string): Promise<boolean> {
    try {
      const [[seconds, micros], score, clients] = await Promise.all([
        this.redis.time(),
        this.redis.zscore(this.keys.liveWorkers, workerId),
        pubsubClients(this.redis),
      ]);
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      if (score === null || Number(score) <= now) return false;
      const name = `name=${controlConnectionName(workerId)}`;
      return clients.split('\n').some((line) => line.split(' ').includes(name));
    } catch (err) {
      // CLIENT LIST may be refused (ACL, a managed Redis): every loss counts, as in BullMQ.
      if (!this.warned) this.logger.warn({ err }, 'cannot tell live workers from dead ones');
      this.warned = true;
      return false;
    }
  }
}

/**
 * The pub/sub connections Redis knows of. A Cluster keeps one client list per node, and a
 * worker's control connection is on whichever node its client picked: every node is asked
 * (a node that is down fails the call, and the caller then counts the loss, as BullMQ would).
 */
async function pubsubClients(redis: RedisClient): Promise<string> {
  const nodes = redis instanceof Cluster ? redis.nodes('all') : [redis];
  const lists = await Promise.all(
    nodes.map((node) => node.call('CLIENT', 'LIST', 'TYPE', 'pubsub') as Promise<string>),
  );
  return lists.join('\n');
}

/** The deaths counted for a job (BullMQ's stall count for a job StallAccounting never saw). */
export async function deathsOf(redis: RedisClient, job: Job): Promise<number> {
  const counted = await redis.hget(jobHashKeyOf(job), JOB_DEATHS_FIELD);
  return counted === null ? job.stalledCounter : Number(counted);
}
