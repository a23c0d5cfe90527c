import { describe, expect, it } from 'vitest';
import { Durability } from './durability.ts';
import type { RedisClient } from './scripts.ts';

/** A client that only answers INFO server, as a Redis of `version` would. */
function redisOf(version: string): RedisClient {
  return {
    info: () =>
      Promise.resolve(`# Server\r\nredis_version:${version}\r\nredis_mode:standalone\r\n`),
  } as unknown as RedisClient;
}

describe('the Redis version check at start-up', () => {
  it('refuses a Redis older than 7 with one line, whatever the durability mode (events are SPUBLISHed)', async () => {
    for (const mode of ['relaxed', 'strict'] as const)
      await expect(new Durability(redisOf('6.2.14'), mode).check()).rejects.toThrow(
        /^Baton needs Redis 7 or later \(sharded pub\/sub: SPUBLISH\/SSUBSCRIBE\); this server is Redis 6\.2\.14$/,
      );
  });

  it('takes Redis 7', async () => {
    expect(await new Durability(redisOf('7.0.15'), 'relaxed').check()).toBe('none');
  });
});
