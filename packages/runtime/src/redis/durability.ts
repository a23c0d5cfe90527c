import type { RedisClient } from './scripts.ts';
import { DurabilityError } from '../errors/durability-error.ts';
import { RedisVersionError } from '../errors/redis-version-error.ts';

export type DurabilityMode = 'relaxed' | 'strict';

/**
 * How an acknowledged write reaches disk:
 * - 'fsync-always': Redis runs with appendonly yes and appendfsync always, so it fsyncs the AOF
 *   before it replies; every reply Baton got is already on disk.
 * - 'waitaof': Redis ≥ 7.2; Baton asks WAITAOF 1 0 before it answers 2xx.
 * - 'none': relaxed mode; whatever Redis is configured for (with appendfsync everysec the last
 *   second of acknowledged writes can be lost in a host crash).
 */
export type DurabilityStrategy = 'fsync-always' | 'waitaof' | 'none';

function field(info: string, name: string): string | undefined {
  const line = info.split(/\r?\n/).find((l) => l.startsWith(`${name}:`));
  return line?.slice(name.length + 1).trim();
}

function atLeast(version: string, major: number, minor: number): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  return a > major || (a === major && b >= minor);
}

/**
 * Decides how strict mode is honoured on this Redis, and checks it once at start-up: a strict
 * process refuses to start against a Redis that cannot keep the promise (one line naming the
 * setting to change), rather than acknowledging writes it may lose.
 */
export class Durability {
  private readonly redis: RedisClient;
  readonly mode: DurabilityMode;
  private strategyValue: DurabilityStrategy = 'none';

  constructor(redis: RedisClient, mode: DurabilityMode) {
    this.redis = redis;
    this.mode = mode;
  }

  get strategy(): DurabilityStrategy {
    return this.strategyValue;
  }

  /**
   * Also refuses a Redis older than 7 (whatever the mode): the commit scripts SPUBLISH every event
   * (sharded pub/sub, Redis 7), and on an older server every commit would fail.
   */
  async check(): Promise<DurabilityStrategy> {
    let server: string;
    try {
      server = await this.redis.info('server');
    } catch (err) {
      // A managed Redis may refuse INFO: relaxed mode has nothing else to check.
      if (this.mode === 'relaxed' && err instanceof Error && err.name === 'ReplyError')
        return (this.strategyValue = 'none');
      throw err;
    }
    const version = field(server, 'redis_version') ?? '0';
    if (!atLeast(version, 7, 0))
      throw new RedisVersionError(
        `Baton needs Redis 7 or later (sharded pub/sub: SPUBLISH/SSUBSCRIBE); this server is Redis ${version}`,
      );
    if (this.mode === 'relaxed') return (this.strategyValue = 'none');
    const persistence = await this.redis.info('persistence');
    const aof = field(persistence, 'aof_enabled') === '1';
    let fsync: string | undefined;
    try {
      const reply = await this.redis.config('GET', 'appendfsync');
      fsync = reply[1];
    } catch {
      fsync = undefined; // CONFIG is often disabled on managed Redis
    }
    if (aof && fsync === 'always') return (this.strategyValue = 'fsync-always');
    if (aof && atLeast(version, 7, 2)) return (this.strategyValue = 'waitaof');
    throw new DurabilityError(
      `BATON_DURABILITY=strict needs Redis to persist every write before it answers: run it with ` +
        `"appendonly yes" and "appendfsync always" (found appendonly ${aof ? 'yes' : 'no'}, ` +
        `appendfsync ${fsync ?? 'unknown'}), or use Redis 7.2+ with appendonly yes (WAITAOF); ` +
        `or set BATON_DURABILITY=relaxed`,
    );
  }

  /** Call after the writes of a request and before answering 2xx. */
  async acknowledge(): Promise<void> {
    if (this.strategyValue !== 'waitaof') return;
    const reply = (await this.redis.call('WAITAOF', '1', '0', '2000')) as [number, number];
    if (reply[0] < 1)
      throw new DurabilityError('Redis did not confirm that the write reached its AOF in time');
  }
}
