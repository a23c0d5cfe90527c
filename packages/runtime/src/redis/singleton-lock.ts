import { randomUUID } from 'node:crypto';
import { defineScript, type RedisClient } from './scripts.ts';

/**
 * Renews the lock if it still holds the caller's token.
 * KEYS: lock   ARGV: token, ttlMs   Reply: 1 renewed | 0 not ours any more
 */
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/**
 * Deletes the lock if it still holds the caller's token. One script, because a GET then a DEL
 * from the client leaves a gap in which the lock can lapse and another process take it: the DEL
 * would then delete the new holder's lock and let a third one in beside it.
 * KEYS: lock   ARGV: token   Reply: 1 released | 0 not ours any more
 */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`;

export interface SingletonLockOptions {
  /** The lock's key (one per duty: `BatonKeys.reconcilerLock`, `archiveLock`, ...). */
  readonly key: string;
  /** How long the lock outlives a holder that died (SET PX; PEXPIRE on each renewal). */
  readonly ttlMs: number;
  /**
   * Renew the lock every this many ms while the work runs (well under `ttlMs`). Without it the
   * lock lapses `ttlMs` after it was taken, however long the work takes.
   */
  readonly renewEveryMs?: number;
}

export type SingletonLockResult<T> =
  { readonly acquired: false } | { readonly acquired: true; readonly value: T };

/**
 * Runs `work` if this process takes the cluster-wide lock `key` (SET NX PX with a random token),
 * and skips it if another process holds the lock. Releasing deletes the lock only if it still
 * holds this holder's token (one script), so a holder that outlived its lock never deletes the
 * lock of the process that took it next.
 *
 * `held` is aborted as soon as the holder may no longer hold the lock: a renewal found another
 * token (or none), or `ttlMs` passed since the lock was last known to be ours (taken or renewed;
 * a renewal that fails on the network does not abort by itself, the deadline does). Work that
 * must not run beside another holder checks it between steps; the lock's holders today only
 * cost duplicate, idempotent work when they overlap, so they run to the end.
 *
 * The value is a bare random string, as the copies this replaced wrote it: their release
 * (GET, compare with their own token, DEL) and this one's can run side by side in a rolling
 * deploy, each deleting only a value it wrote.
 */
export async function withSingletonLock<T>(
  redis: RedisClient,
  opts: SingletonLockOptions,
  work: (held: AbortSignal) => Promise<T>,
): Promise<SingletonLockResult<T>> {
  const { key, ttlMs, renewEveryMs } = opts;
  const token = randomUUID();
  const sentAt = Date.now();
  if ((await redis.set(key, token, 'PX', ttlMs, 'NX')) === null) return { acquired: false };
  const held = new AbortController();
  const lose = (why: string): void => {
    if (!held.signal.aborted)
      held.abort(new DOMException(`singleton lock ${key}: ${why}`, 'AbortError'));
  };
  // Measured from before the SET or PEXPIRE was sent: Redis started the TTL later, never earlier.
  let deadline: NodeJS.Timeout | undefined;
  const heldUntil = (from: number): void => {
    clearTimeout(deadline);
    deadline = setTimeout(
      () => lose(`not renewed within ${ttlMs} ms, it may have lapsed`),
      Math.max(0, from + ttlMs - Date.now()),
    );
    deadline.unref();
  };
  heldUntil(sentAt);

  let renewing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  if (renewEveryMs !== undefined) {
    const renew = defineScript<[lock: string], [token: string, ttlMs: number], 0 | 1>(
      redis,
      'batonSingletonLockRenew',
      1,
      RENEW_LUA,
    );
    const tick = (): void => {
      const at = Date.now();
      renewing = renew([key], [token, ttlMs]).then(
        (ours) => {
          if (ours !== 1) lose('another process holds it now (or it lapsed)');
          else if (!held.signal.aborted) heldUntil(at);
        },
        // A failed round trip proves nothing either way: the deadline decides.
        () => undefined,
      );
      void renewing.then(() => {
        if (stopped || held.signal.aborted) return;
        timer = setTimeout(tick, renewEveryMs);
        timer.unref();
      });
    };
    timer = setTimeout(tick, renewEveryMs);
    timer.unref();
  }

  try {
    return { acquired: true, value: await work(held.signal) };
  } finally {
    stopped = true;
    clearTimeout(timer);
    clearTimeout(deadline);
    await renewing;
    await releaseSingletonLock(redis, key, token);
  }
}

/** Deletes `key` if it still holds `token` (one script); false when another holder has it. */
async function releaseSingletonLock(
  redis: RedisClient,
  key: string,
  token: string,
): Promise<boolean> {
  const release = defineScript<[lock: string], [token: string], 0 | 1>(
    redis,
    'batonSingletonLockRelease',
    1,
    RELEASE_LUA,
  );
  return (await release([key], [token])) === 1;
}
