/**
 * Where a run's queue traffic lives: one BullMQ queue per (task queue, shard), each under its own
 * Redis Cluster hash tag, so K shards spread BullMQ's load over the masters instead of putting
 * it all on the one that holds a single tag. Pure: no I/O.
 */

/** The slots of a Redis Cluster. */
export const CLUSTER_SLOTS = 16_384;

/** The largest BATON_QUEUE_SHARDS (each shard is a BullMQ queue every worker of a pool serves). */
export const MAX_QUEUE_SHARDS = 256;

/** What a task queue may be called (it is part of BullMQ queue names, which may not hold ':'). */
export const TASK_QUEUE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const DEFAULT_TASK_QUEUE = 'default';

const CRC16_TABLE = ((): Uint16Array => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i += 1) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/** CRC16-CCITT (XMODEM), the checksum Redis Cluster maps keys to slots with. */
export function crc16(text: string): number {
  let crc = 0;
  // Run ids and queue names are ASCII: their UTF-8 bytes are their char codes, no Buffer needed
  // (this runs on every job a worker adds).
  let ascii = true;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) {
      ascii = false;
      break;
    }
    crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ code) & 0xff] ?? 0);
  }
  if (ascii) return crc;
  crc = 0;
  for (const byte of Buffer.from(text, 'utf8'))
    crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ byte) & 0xff] ?? 0);
  return crc;
}

/** The cluster slot of a key, hash tags included (as `CLUSTER KEYSLOT`). */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key.slice(open + 1, close)) % CLUSTER_SLOTS;
  }
  return crc16(key) % CLUSTER_SLOTS;
}

/** The hash tag of a key (the text its slot is computed from). */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

function fnv1a64(text: string): bigint {
  let hash = FNV_OFFSET;
  for (const byte of Buffer.from(text, 'utf8')) hash = ((hash ^ BigInt(byte)) * FNV_PRIME) & MASK64;
  return hash;
}

/**
 * Jump consistent hash (Lamping & Veach): a key's bucket among `buckets`; growing the number of
 * buckets from n to n+1 moves only 1/(n+1) of the keys.
 */
export function jumpHash(key: bigint, buckets: number): number {
  let k = key & MASK64;
  let b = -1;
  let j = 0;
  while (j < buckets) {
    b = j;
    k = (k * 2862933555777941757n + 1n) & MASK64;
    j = Math.floor(((b + 1) * 2 ** 31) / (Number(k >> 33n) + 1));
  }
  return b;
}

/** The shard of a run: a stable hash of its id, so every producer picks the same one. */
export function shardOf(runId: string, shards: number): number {
  return shards <= 1 ? 0 : jumpHash(fnv1a64(runId), shards);
}

/**
 * The hash tag of shard `index` of `shards`: the first candidate whose slot falls in the
 * index-th of `shards` equal slot ranges (shifted per task queue, so shard 0 of every pool does
 * not land on the same master). Masters hold contiguous slot ranges, so the shards of a pool
 * spread over them evenly. Deterministic: every process computes the same tags.
 */
export function shardTag(taskQueue: string, index: number, shards: number): string {
  const range = (index + (crc16(taskQueue) % shards)) % shards;
  const from = Math.floor((range * CLUSTER_SLOTS) / shards);
  const to = Math.floor(((range + 1) * CLUSTER_SLOTS) / shards);
  for (let n = 0; ; n += 1) {
    const candidate = `q${String(shards)}-${String(range)}-${String(n)}`;
    const slot = crc16(candidate) % CLUSTER_SLOTS;
    if (slot >= from && slot < to) return candidate;
  }
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/**
 * The BullMQ queue of one shard of a task queue, e.g. `default.s03-16{q16-3-117}`: readable in
 * Bull Board, K is part of the name (a changed K makes new queues; the old ones drain), and the
 * hash tag makes every key of the queue (jobs, flows) share one slot.
 */
export function shardQueueName(taskQueue: string, index: number, shards: number): string {
  const width = Math.max(2, String(shards).length);
  return `${taskQueue}.s${pad(index, width)}-${pad(shards, width)}{${shardTag(taskQueue, index, shards)}}`;
}

const SHARD_QUEUE = /^([A-Za-z0-9_-]{1,64})\.s(\d+)-(\d+)\{[^{}]+\}$/;

/** The task queue, shard and K of a shard queue's name; null for any other queue. */
export function parseShardQueueName(
  name: string,
): { taskQueue: string; index: number; shards: number } | null {
  const m = SHARD_QUEUE.exec(name);
  if (!m) return null;
  return { taskQueue: m[1] as string, index: Number(m[2]), shards: Number(m[3]) };
}

/** Every shard queue of a task queue under K shards. */
export function shardQueueNames(taskQueue: string, shards: number): string[] {
  return Array.from({ length: shards }, (_, i) => shardQueueName(taskQueue, i, shards));
}
