import { describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import type { Socket } from 'node:net';
import { coalesceWrites } from './write-coalescing.ts';

const url = inject('redisUrl');

/** Counts the write system calls the socket makes from now on. */
function countWrites(socket: Socket): () => number {
  let writes = 0;
  const handle = (socket as unknown as { _handle: Record<string, unknown> })._handle;
  for (const name of ['writev', 'writeUtf8String', 'writeBuffer', 'writeLatin1String']) {
    const original = handle[name];
    if (typeof original !== 'function') continue;
    handle[name] = (...args: unknown[]): unknown => {
      writes += 1;
      return (original as (...a: unknown[]) => unknown).apply(handle, args);
    };
  }
  return () => writes;
}

const streamOf = (redis: Redis): Socket => (redis as unknown as { stream: Socket }).stream;

async function echoBurst(redis: Redis, n: number): Promise<void> {
  const replies = await Promise.all(
    Array.from({ length: n }, (_, i) => redis.echo(`m${String(i)}`)),
  );
  expect(replies).toEqual(Array.from({ length: n }, (_, i) => `m${String(i)}`));
}

describe('coalesceWrites', () => {
  it('sends the commands of one turn in one socket write, with the same replies in order', async () => {
    const redis = new Redis(url);
    await redis.ping();
    coalesceWrites(redis);
    const writes = countWrites(streamOf(redis));
    await echoBurst(redis, 20);
    expect(writes()).toBe(1);
    // A later turn is written on its own, and nothing waits for a next command.
    expect(await redis.echo('later')).toBe('later');
    expect(writes()).toBe(2);
    redis.disconnect();
  });

  it('coalesces the new socket after a reconnect too', async () => {
    const redis = new Redis(url);
    await redis.ping();
    coalesceWrites(redis);
    const before = streamOf(redis);
    const reconnected = new Promise((resolve) => redis.once('ready', resolve));
    const id = String(await redis.client('ID'));
    await redis.call('CLIENT', 'KILL', 'ID', id, 'SKIPME', 'no').catch(() => undefined);
    await reconnected;
    expect(streamOf(redis)).not.toBe(before);
    const writes = countWrites(streamOf(redis));
    await echoBurst(redis, 10);
    expect(writes()).toBe(1);
    redis.disconnect();
  });
});
