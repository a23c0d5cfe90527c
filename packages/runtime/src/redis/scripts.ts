import type { Cluster, Redis } from 'ioredis';

/** A plain ioredis client or a cluster client: everything here uses hash-tagged keys. */
export type RedisClient = Redis | Cluster;

export type LuaArg = string | number;

/**
 * A Lua script as a typed function: its KEYS and ARGV as (named) tuples and its reply, as the
 * script's header comment states them. The reply type is a promise about the Lua, not a runtime
 * check: keep the two in step when either changes.
 */
export type LuaScript<Keys extends readonly string[], Argv extends readonly LuaArg[], Reply> = (
  keys: Keys,
  argv: Argv,
) => Promise<Reply>;

/**
 * Registers `lua` as a custom command `name` on the client (once per client: EVALSHA, falling
 * back to EVAL on NOSCRIPT) and returns it typed. `numberOfKeys` must be the length of `Keys`;
 * a call with another number of keys throws before reaching Redis.
 */
export function defineScript<Keys extends readonly string[], Argv extends readonly LuaArg[], Reply>(
  redis: RedisClient,
  name: string,
  numberOfKeys: Keys['length'],
  lua: string,
): LuaScript<Keys, Argv, Reply> {
  const call = registered<Reply>(redis, name, { numberOfKeys, lua });
  return async (keys, argv) => {
    if (keys.length !== numberOfKeys)
      throw new Error(`${name}: ${keys.length} keys given, the script takes ${numberOfKeys}`);
    return call(...keys, ...argv);
  };
}

/**
 * defineScript for a script whose number of keys varies between calls (the number is sent with
 * each call, as EVALSHA takes it).
 */
export function defineVariadicScript<Argv extends readonly LuaArg[], Reply>(
  redis: RedisClient,
  name: string,
  lua: string,
): LuaScript<readonly string[], Argv, Reply> {
  const call = registered<Reply>(redis, name, { lua });
  return async (keys, argv) => call(keys.length, ...keys, ...argv);
}

/** The client's custom command `name`, defined once per client (EVALSHA, EVAL on NOSCRIPT). */
function registered<Reply>(
  redis: RedisClient,
  name: string,
  definition: { numberOfKeys?: number; lua: string },
): (...args: LuaArg[]) => Promise<Reply> {
  // ioredis' documented defineCommand adds a method by name, which its types cannot show.
  // eslint-disable-next-line no-restricted-syntax
  const commands = redis as unknown as Record<string, unknown>;
  if (typeof commands[name] !== 'function') redis.defineCommand(name, definition);
  const fn = commands[name];
  if (typeof fn !== 'function') throw new Error(`defineScript: ioredis did not define ${name}`);
  return (fn as (...args: LuaArg[]) => Promise<Reply>).bind(redis);
}
