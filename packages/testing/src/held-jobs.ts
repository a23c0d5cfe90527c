/**
 * BullMQ jobs a prefix's queues hold that are not finished (waiting, prioritized, delayed,
 * active, waiting for children, paused): what a run that waits must not hold (issue 36).
 */
import { mastersOf, type AnyRedis } from './redis-client.ts';

const LIVE = /:(wait|active|paused|prioritized|delayed|waiting-children)$/;

export async function heldJobs(redis: AnyRedis, prefix: string): Promise<number> {
  let n = 0;
  for (const node of mastersOf(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `*${prefix}-bull*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        if (!LIVE.test(key)) continue;
        const type = await node.type(key);
        if (type === 'list') n += await node.llen(key);
        else if (type === 'zset') n += await node.zcard(key);
      }
    } while (cursor !== '0');
  }
  return n;
}
