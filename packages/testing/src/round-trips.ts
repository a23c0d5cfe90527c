import { Redis } from 'ioredis';
import pg from 'pg';
import type { RedisClient } from '@baton/runtime';
import { waitFor } from './worker-harness.ts';

/** What `read` sent that names `id`: commands of one Redis connection, pg queries. */
export interface RoundTrips {
  readonly redis: string[];
  readonly pg: string[];
}

/**
 * Counts round trips at the servers' doors, not in Baton's code: Redis's MONITOR (the commands
 * of `connection`, a client of the server at `redisUrl`, that name `id`) and every query a pg
 * client of this process sends with `id` among its parameters (a pool's query is its client's).
 * `probe`, another client of the same server, sends a sentinel after the read: MONITOR shows
 * commands in the order Redis ran them, so every command of the read comes before it.
 */
export async function countRoundTrips(
  opts: {
    readonly redisUrl: string;
    readonly connection: RedisClient;
    readonly probe: RedisClient;
    readonly id: string;
  },
  read: () => Promise<void>,
): Promise<RoundTrips> {
  const { id } = opts;
  const info = String(await opts.connection.call('CLIENT', 'INFO'));
  const addr = /\baddr=(\S+)/.exec(info)?.[1];
  if (addr === undefined) throw new Error(`CLIENT INFO without an address: ${info}`);
  const monitor = new Redis(opts.redisUrl, { lazyConnect: true });
  await monitor.connect();
  const redis: string[] = [];
  const sentinel = `round-trips-${id}-end`;
  let ended = false;
  const watching = await monitor.monitor();
  watching.on('monitor', (_time: string, args: string[], source: string) => {
    if (args.includes(sentinel)) ended = true;
    else if (!ended && source === addr && args.some((a) => a.includes(id)))
      redis.push(args.join(' '));
  });
  const queries: string[] = [];
  const original = pg.Client.prototype.query;
  const counting = function (this: pg.Client, ...args: unknown[]): unknown {
    const [text, values] = args;
    if (Array.isArray(values) && values.includes(id))
      queries.push(typeof text === 'string' ? text : JSON.stringify(text));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  };
  pg.Client.prototype.query = counting as typeof original;
  try {
    await read();
  } finally {
    pg.Client.prototype.query = original;
  }
  try {
    await opts.probe.echo(sentinel);
    await waitFor(() => Promise.resolve(ended), 5_000, 'the MONITOR sentinel');
  } finally {
    watching.disconnect();
    monitor.disconnect();
  }
  return { redis, pg: queries };
}
