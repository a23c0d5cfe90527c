/**
 * Issue 32: a busy, healthy cluster answered 503 at the API's 500 ms command timeout. ioredis'
 * timer fired in the event loop's timers phase after the API's own work had held the loop past
 * it, before the poll phase read the reply that had long arrived. A command timeout is now judged
 * after the sockets were read: only Redis' silence fails a command.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { roleOptions } from '../../redis/connection.ts';

const clients: Redis[] = [];

afterAll(() => {
  for (const c of clients) c.disconnect();
});

/** The API's one-node connection, with a short command timeout, connected. */
async function apiClient(): Promise<Redis> {
  const redis = new Redis(inject('redisUrl'), { ...roleOptions('api'), commandTimeout: 200 });
  redis.on('error', () => undefined);
  clients.push(redis);
  await new Promise((resolve) => redis.once('ready', resolve));
  return redis;
}

/** Holds this process's event loop, as a request's CPU work on a loaded host does. */
function holdEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

describe("the API's command timeout", () => {
  it('does not fail a command whose reply arrived while the event loop was held past its timeout', async () => {
    const redis = await apiClient();
    const replies = Array.from({ length: 20 }, (_, i) =>
      redis.echo(`e${String(i)}`).catch((error: unknown) => String(error)),
    );
    holdEventLoop(600);
    expect(await Promise.all(replies)).toEqual(
      Array.from({ length: 20 }, (_, i) => `e${String(i)}`),
    );
  });

  it('still fails a command Redis does not answer in time', async () => {
    const redis = await apiClient();
    // A blocking pop on a key nobody pushes to: Redis answers after 2 s, the timeout is 200 ms.
    const started = Date.now();
    await expect(redis.call('BLPOP', `command-timeout:${String(started)}`, '2')).rejects.toThrow(
      'Command timed out',
    );
  });
});
