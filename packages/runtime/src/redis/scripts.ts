import type { Cluster, Redis } from 'ioredis';

/** A plain ioredis client or a cluster client: everything here uses hash-tagged keys. */
export type RedisClient = Redis | Cluster;

/** A Lua script registered with ioredis' defineCommand (EVALSHA, falling back to EVAL on NOSCRIPT). */
export type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

/**
 * Registers `lua` as a custom command `name` on the client (once per client) and returns a bound
 * caller. The first `numberOfKeys` arguments are keys, the rest ARGV.
 */
export function defineScript(
  redis: RedisClient,
  name: string,
  numberOfKeys: number,
  lua: string,
): ScriptCall {
  const commands = redis as unknown as Record<string, unknown>;
  if (typeof commands[name] !== 'function') redis.defineCommand(name, { numberOfKeys, lua });
  const fn = commands[name];
  if (typeof fn !== 'function') throw new Error(`defineScript: ioredis did not define ${name}`);
  return (fn as ScriptCall).bind(redis);
}
