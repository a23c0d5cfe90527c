import { randomUUID } from 'node:crypto';
import type { BatonKeys } from './redis/keys.ts';
import { defineScript, type RedisClient, type ScriptCall } from './redis/scripts.ts';

/**
 * Single-flight per run. Exactly one job (step or tool drain) may advance a run at a time; a job
 * that finds the lease taken leaves a "pending" mark instead of waiting, and the holder sees the
 * mark when it releases and schedules another pass. So no wake-up is ever lost and no worker
 * blocks on another. A crashed holder's lease expires after its TTL.
 */
const ACQUIRE_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return 0`;

const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
if redis.call('DEL', KEYS[2]) == 1 then return 1 end
return 0`;

// Releases only when nobody asked for the run meanwhile; otherwise clears the mark and keeps
// the lease, so the holder makes one more pass itself instead of scheduling a job for it.
const RELEASE_IF_IDLE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('DEL', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 0
end
redis.call('DEL', KEYS[1])
return 1`;

const RENEW_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

export function runAuxKey(
  keys: BatonKeys,
  runId: string,
  suffix: 'lease' | 'pending' | 'results' | 'inferring' | 'parent',
): string {
  return keys.run(runId).cp.replace(/:cp$/, `:${suffix}`);
}

export interface Lease {
  readonly runId: string;
  readonly token: string;
  /** Releases; true when another job asked for the run meanwhile (the caller must reschedule). */
  release(): Promise<boolean>;
  /**
   * Releases unless another job asked for the run meanwhile; then the mark is cleared, the lease
   * kept, and false returned: the caller must look at the run again.
   */
  releaseIfIdle(): Promise<boolean>;
}

export class RunLeases {
  private readonly acquireScript: ScriptCall;
  private readonly releaseScript: ScriptCall;
  private readonly releaseIfIdleScript: ScriptCall;
  private readonly renewScript: ScriptCall;
  private readonly keys: BatonKeys;
  readonly ttlMs: number;

  constructor(redis: RedisClient, keys: BatonKeys, ttlMs: number) {
    this.keys = keys;
    this.ttlMs = ttlMs;
    this.acquireScript = defineScript(redis, 'batonLeaseAcquire', 2, ACQUIRE_LUA);
    this.releaseScript = defineScript(redis, 'batonLeaseRelease', 2, RELEASE_LUA);
    this.renewScript = defineScript(redis, 'batonLeaseRenew', 1, RENEW_LUA);
    this.releaseIfIdleScript = defineScript(
      redis,
      'batonLeaseReleaseIfIdle',
      2,
      RELEASE_IF_IDLE_LUA,
    );
  }

  /** The lease, renewed in the background until released; null when another job holds it. */
  async acquire(runId: string): Promise<Lease | null> {
    const token = randomUUID();
    const lease = runAuxKey(this.keys, runId, 'lease');
    const pending = runAuxKey(this.keys, runId, 'pending');
    // The pending mark outlives the lease so a holder that crashes still leaves it for the next one.
    const got = await this.acquireScript(lease, pending, token, this.ttlMs, this.ttlMs * 4);
    if (got !== 1) return null;
    const timer = setInterval(
      () => {
        this.renewScript(lease, token, this.ttlMs).catch(() => undefined);
      },
      Math.max(50, Math.floor(this.ttlMs / 3)),
    );
    timer.unref();
    let released = false;
    return {
      runId,
      token,
      release: async () => {
        if (released) return false;
        released = true;
        clearInterval(timer);
        return (await this.releaseScript(lease, pending, token)) === 1;
      },
      releaseIfIdle: async () => {
        if (released) return true;
        const result = await this.releaseIfIdleScript(lease, pending, token, this.ttlMs);
        if (result === 0) return false;
        released = true;
        clearInterval(timer);
        return true;
      },
    };
  }
}
