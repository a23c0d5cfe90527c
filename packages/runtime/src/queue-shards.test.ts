import { describe, expect, it } from 'vitest';
import {
  CLUSTER_SLOTS,
  crc16,
  jumpHash,
  keySlot,
  parseShardQueueName,
  shardOf,
  shardQueueName,
  shardQueueNames,
  shardTag,
} from './queue-shards.ts';

describe('queue shards', () => {
  it('maps keys to the slots Redis does (CLUSTER KEYSLOT)', () => {
    expect(crc16('123456789')).toBe(0x31c3);
    // Non-ASCII text is checksummed over its UTF-8 bytes (the bitwise CRC16-XMODEM as reference).
    const bitwise = (text: string): number => {
      let crc = 0;
      for (const byte of Buffer.from(text, 'utf8')) {
        crc ^= byte << 8;
        for (let bit = 0; bit < 8; bit += 1)
          crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
      }
      return crc;
    };
    for (const text of ['123456789', 'run-é', 'x😀y', '']) expect(crc16(text)).toBe(bitwise(text));
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('bar')).toBe(5061);
    expect(keySlot('123456789')).toBe(12739);
    expect(keySlot('{user1000}.following')).toBe(keySlot('user1000'));
    expect(keySlot('foo{}{bar}')).toBe(crc16('foo{}{bar}') % CLUSTER_SLOTS);
  });

  it('spreads the shards of a task queue evenly over the slot space', () => {
    for (const k of [1, 3, 16, 256]) {
      const slots = Array.from({ length: k }, (_, i) => keySlot(`{${shardTag('default', i, k)}}`));
      const ranges = slots.map((s) => Math.floor((s * k) / CLUSTER_SLOTS));
      // Every range holds exactly one shard.
      expect(new Set(ranges).size).toBe(k);
    }
    // Three masters with contiguous ranges: none gets more than its share (rounded up) of 16.
    const perMaster = [0, 0, 0];
    for (let i = 0; i < 16; i += 1) {
      const slot = keySlot(`{${shardTag('default', i, 16)}}`);
      const master = Math.min(2, Math.floor((slot * 3) / CLUSTER_SLOTS));
      perMaster[master] = (perMaster[master] ?? 0) + 1;
    }
    expect(Math.max(...perMaster)).toBeLessThanOrEqual(6);
  });

  it('names queues readably with K in the name, and parses them back', () => {
    const name = shardQueueName('default', 3, 16);
    expect(name).toMatch(/^default\.s03-16\{q16-\d+-\d+\}$/);
    expect(parseShardQueueName(name)).toEqual({ taskQueue: 'default', index: 3, shards: 16 });
    expect(parseShardQueueName('steps.assistant')).toBeNull();
    expect(shardQueueNames('default', 4)).not.toContain(shardQueueName('default', 1, 2));
  });

  it('puts a run in a stable shard, spread over all of them', () => {
    expect(shardOf('run-1', 1)).toBe(0);
    expect(shardOf('run-1', 16)).toBe(shardOf('run-1', 16));
    const hits = new Set(Array.from({ length: 200 }, (_, i) => shardOf(`run-${String(i)}`, 8)));
    expect(hits.size).toBe(8);
    // Jump hash: growing the buckets moves a key only to the new bucket.
    for (let i = 0n; i < 100n; i += 1n) {
      const before = jumpHash(i * 7919n, 4);
      const after = jumpHash(i * 7919n, 5);
      expect(after === before || after === 4).toBe(true);
    }
  });
});
