import { shardOf } from '../queue-shards.ts';
import type { BatonKeys } from '../redis/keys.ts';
import { defineScript, type LuaScript, type RedisClient } from '../redis/scripts.ts';

/**
 * What a timer is for. `deadline`: a suspended call's deadline (and a durable sleep, which is a
 * call suspended until its deadline). Others plug in with their own kind and handler
 * (TimerSweeper.on), e.g. a waitpoint's or an event wait's timeout.
 */
export type TimerKind = 'deadline' | (string & {});

/** One timer: at most one per (kind, run, call); scheduling it again moves it. */
export interface TimerRef {
  readonly kind: TimerKind;
  readonly tenantId: string;
  readonly runId: string;
  /** The call it is about ('' when it is about the run). */
  readonly callId: string;
}

export interface TimerEntry extends TimerRef {
  /** When it is due, epoch ms (the scheduling process's clock). */
  readonly due: number;
}

/** A timer a sweeper claimed: it fires it, then acks with `lease`. */
export interface ClaimedTimer extends TimerEntry {
  readonly key: string;
  readonly member: string;
  /** The claim's expiry (the entry's score while claimed): what the ack compares. */
  readonly lease: number;
}

/**
 * Claims up to `limit` due entries: each one's score becomes the claim's expiry, so no other
 * sweeper takes it meanwhile, and a sweeper that dies leaves it due again once the claim expires.
 * Also answers the earliest score left, so a sweeper can sleep until it.
 * KEYS: shard   ARGV: now, limit, leaseUntil
 * Reply: [earliest score left or '', member, due, member, due, …]
 */
const CLAIM_LUA = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #due, 2 do redis.call('ZADD', KEYS[1], 'XX', ARGV[3], due[i]) end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
table.insert(due, 1, first[2] or '')
return due`;

/**
 * Settles claimed entries whose score is still the claim's (nobody rescheduled them meanwhile):
 * removed, or moved to a new due time when one is given.
 * KEYS: shard   ARGV: lease, then member, next ('' = remove) pairs   Reply: entries settled
 */
const ACK_LUA = `
local lease = tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV, 2 do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) == lease then
    if ARGV[i + 1] == '' then redis.call('ZREM', KEYS[1], ARGV[i])
    else redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i]) end
    n = n + 1
  end
end
return n`;

function memberOf(t: TimerRef): string {
  return JSON.stringify([t.kind, t.tenantId, t.runId, t.callId]);
}

function refOf(member: string): TimerRef | null {
  try {
    const parsed: unknown = JSON.parse(member);
    if (!Array.isArray(parsed) || parsed.length !== 4) return null;
    const [kind, tenantId, runId, callId] = parsed as unknown[];
    if (typeof kind !== 'string' || typeof tenantId !== 'string') return null;
    if (typeof runId !== 'string' || typeof callId !== 'string') return null;
    return { kind, tenantId, runId, callId };
  } catch {
    return null;
  }
}

/**
 * The shared timer index: one sorted set per shard (`BATON_QUEUE_SHARDS`, the run's shard by the
 * same jump hash as its queue), due time -> entry. Scheduling is a ZADD, cancelling a ZREM;
 * live workers sweep it (TimerSweeper), so a waiting run holds no job and no worker. An entry
 * costs ~100 bytes of Redis.
 */
export class TimerIndex {
  readonly shards: number;
  private readonly redis: RedisClient;
  private readonly keys: BatonKeys;
  private readonly claimScript: LuaScript<[string], [number, number, number], string[]>;
  private readonly ackScript: LuaScript<[string], (string | number)[], number>;
  private layoutNoted = false;

  constructor(redis: RedisClient, keys: BatonKeys, shards: number) {
    this.redis = redis;
    this.keys = keys;
    this.shards = shards;
    this.claimScript = defineScript(redis, 'batonTimerClaim', 1, CLAIM_LUA);
    this.ackScript = defineScript(redis, 'batonTimerAck', 1, ACK_LUA);
  }

  keyOf(runId: string): string {
    return this.keys.timerShard(shardOf(runId, this.shards), this.shards);
  }

  /**
   * Adds the timers, or moves them to their new due time (one entry per kind, run and call), then
   * bumps the change counter (after the ZADDs: a sweeper that sees the new count finds them).
   */
  async schedule(entries: readonly TimerEntry[]): Promise<void> {
    if (entries.length === 0) return;
    if (!this.layoutNoted) {
      await this.redis.sadd(this.keys.timerLayouts, String(this.shards));
      this.layoutNoted = true;
    }
    await Promise.all(
      [...this.byKey(entries)].map(async ([key, group]) => {
        const args = group.flatMap((e) => [e.due, memberOf(e)]);
        await this.redis.zadd(key, ...args);
      }),
    );
    await this.redis.incr(this.keys.timersChanged);
  }

  /**
   * The change counter: it moves after every schedule, so a sweeper that read it before a sweep
   * and reads the same value later knows no timer was added or moved meanwhile.
   */
  async changes(): Promise<string> {
    return (await this.redis.get(this.keys.timersChanged)) ?? '0';
  }

  /** Removes the timers (a call decided, a run ended); a missing one is no error. */
  async cancel(refs: readonly TimerRef[]): Promise<void> {
    if (refs.length === 0) return;
    await Promise.all(
      [...this.byKey(refs)].map(([key, group]) => this.redis.zrem(key, ...group.map(memberOf))),
    );
  }

  /** The due time of a timer; null when there is none (tests, the snapshot's checks). */
  async dueOf(ref: TimerRef): Promise<number | null> {
    const score = await this.redis.zscore(this.keyOf(ref.runId), memberOf(ref));
    return score === null ? null : Number(score);
  }

  /** Every shard key a sweeper must look at: this layout's, and any other count's still in use. */
  async shardKeys(): Promise<string[]> {
    const counts = new Set([this.shards]);
    for (const k of await this.redis.smembers(this.keys.timerLayouts)) {
      const n = Number(k);
      if (Number.isInteger(n) && n > 0 && n <= 4096) counts.add(n);
    }
    const keys: string[] = [];
    for (const n of counts) for (let i = 0; i < n; i += 1) keys.push(this.keys.timerShard(i, n));
    return keys;
  }

  /** Entries in all shards (bench, tests). */
  async size(): Promise<number> {
    let n = 0;
    for (const key of await this.shardKeys()) n += await this.redis.zcard(key);
    return n;
  }

  /**
   * Claims up to `limit` entries of `key` due at `now`, for `leaseMs`; `next`: the earliest score
   * left in the shard (a later timer, or a claim's expiry), null when it is empty.
   */
  async claim(
    key: string,
    now: number,
    limit: number,
    leaseMs: number,
  ): Promise<{ readonly claimed: ClaimedTimer[]; readonly next: number | null }> {
    // A fraction makes each claim's expiry its own, so an ack never settles another's claim.
    const lease = Math.round((now + leaseMs + Math.random()) * 1000) / 1000;
    const [first, ...reply] = await this.claimScript([key], [now, limit, lease]);
    const claimed: ClaimedTimer[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const member = reply[i] ?? '';
      const ref = refOf(member);
      // Not ours to read (a later release's format?): left for whoever wrote it.
      if (ref === null) continue;
      claimed.push({ ...ref, due: Number(reply[i + 1]), key, member, lease });
    }
    return { claimed, next: first === undefined || first === '' ? null : Number(first) };
  }

  /** Settles claimed timers: removed (`next` null) or due again at `next`, unless moved since. */
  async ack(
    settled: readonly { readonly timer: ClaimedTimer; readonly next: number | null }[],
  ): Promise<void> {
    const groups = new Map<string, (string | number)[]>();
    for (const { timer, next } of settled) {
      const id = `${timer.key}\n${String(timer.lease)}`;
      let args = groups.get(id);
      if (!args) groups.set(id, (args = [timer.lease]));
      args.push(timer.member, next === null ? '' : next);
    }
    await Promise.all(
      [...groups].map(([id, args]) => this.ackScript([id.split('\n')[0] ?? ''], args)),
    );
  }

  private byKey<T extends TimerRef>(items: readonly T[]): Map<string, T[]> {
    const groups = new Map<string, T[]>();
    for (const item of items) {
      const key = this.keyOf(item.runId);
      const group = groups.get(key);
      if (group) group.push(item);
      else groups.set(key, [item]);
    }
    return groups;
  }
}
