import type { JsonValue, Message, MultitaskStrategy } from '@baton/protocol';
import { BatonKeys } from './keys.ts';
import { defineScript, type RedisClient, type ScriptCall } from './scripts.ts';

export type AcquireResult =
  | { readonly kind: 'acquired' }
  | { readonly kind: 'busy'; readonly activeRunId: string }
  | { readonly kind: 'queued'; readonly position: number; readonly activeRunId: string }
  | { readonly kind: 'interrupt'; readonly activeRunId: string };

export interface ThreadSnapshot {
  readonly messages: Message[];
  readonly state: Record<string, JsonValue>;
  readonly activeRunId: string | null;
  /** Pending run ids, next to be promoted first. */
  readonly queued: string[];
  /** Every run of the thread, oldest first. */
  readonly runIds: string[];
}

export class RunAlreadyReleasedError extends Error {
  readonly code = 'run_released';
  constructor(threadId: string, runId: string) {
    super(`thread ${threadId}: run ${runId} was already released`);
    this.name = 'RunAlreadyReleasedError';
  }
}

/**
 * KEYS: meta, queue, runs, released
 * ARGV: runId, strategy, now
 * Reply: {'acquired'} | {'busy', active} | {'queued', position, active} | {'interrupt', active} | {'released'}
 */
const ACQUIRE_LUA = `
local meta, queue, runs, released = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local runId, strategy, now = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HEXISTS', released, runId) == 1 then return {'released'} end
local active = redis.call('HGET', meta, 'activeRunId')
if active == runId then return {'acquired'} end
local pos = redis.call('LPOS', queue, runId)
if pos then
  if strategy == 'interrupt' then return {'interrupt', active} end
  return {'queued', pos + 1, active}
end
if not active or active == '' then
  redis.call('HSET', meta, 'activeRunId', runId)
  redis.call('ZADD', runs, 'NX', now, runId)
  return {'acquired'}
end
if strategy == 'reject' then return {'busy', active} end
if strategy == 'enqueue' then
  local n = redis.call('RPUSH', queue, runId)
  redis.call('ZADD', runs, 'NX', now, runId)
  return {'queued', n, active}
end
if strategy == 'interrupt' then
  redis.call('LPUSH', queue, runId)
  redis.call('ZADD', runs, 'NX', now, runId)
  return {'interrupt', active}
end
return redis.error_reply('unknown multitask strategy ' .. strategy)
`;

/**
 * KEYS: meta, queue, messages, state, released
 * ARGV: runId, setState ('1'|'0'), stateJson, messageJson…
 * Reply: {first (1|0), next ('' = none)}
 */
const RELEASE_LUA = `
local meta, queue, messages, state, released = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local runId = ARGV[1]
local prev = redis.call('HGET', released, runId)
if prev then return {0, prev} end
local nextRun = ''
if redis.call('HGET', meta, 'activeRunId') == runId then
  -- only the active run writes the thread: a queued run that never started adds nothing
  for i = 4, #ARGV do redis.call('RPUSH', messages, ARGV[i]) end
  if ARGV[2] == '1' then redis.call('SET', state, ARGV[3]) end
  local n = redis.call('LPOP', queue)
  if n then
    nextRun = n
    redis.call('HSET', meta, 'activeRunId', n)
  else
    redis.call('HDEL', meta, 'activeRunId')
  end
else
  -- a queued run that ends before it started (cancelled) leaves the queue
  redis.call('LREM', queue, 0, runId)
end
redis.call('HSET', released, runId, nextRun)
return {1, nextRun}
`;

export interface RedisThreadStoreOptions {
  readonly redis: RedisClient;
  readonly prefix?: string;
  /** Score of a run in the thread's run index when acquire() sees it first (default Date.now). */
  readonly now?: () => number;
}

/**
 * Threads on Redis: history, persistent thread state, the active run and the multitask queue.
 * acquire/release are single Lua scripts on the thread's hash-tagged keys.
 */
export class RedisThreadStore {
  readonly keys: BatonKeys;
  private readonly redis: RedisClient;
  private readonly now: () => number;
  private readonly acquireScript: ScriptCall;
  private readonly releaseScript: ScriptCall;

  constructor(opts: RedisThreadStoreOptions) {
    this.redis = opts.redis;
    this.keys = new BatonKeys(opts.prefix);
    this.now = opts.now ?? Date.now;
    this.acquireScript = defineScript(this.redis, 'batonThreadAcquire', 4, ACQUIRE_LUA);
    this.releaseScript = defineScript(this.redis, 'batonThreadRelease', 5, RELEASE_LUA);
  }

  /**
   * Make runId the thread's active run, or apply the multitask strategy when another run is
   * active: 'reject' → busy; 'enqueue' → queued at the tail; 'interrupt' → queued at the head, the
   * caller cancels the active run and this one is promoted when it releases. Idempotent for a run
   * that is already active or queued. Throws RunAlreadyReleasedError for a released run.
   */
  async acquire(
    tenantId: string,
    threadId: string,
    runId: string,
    strategy: MultitaskStrategy,
  ): Promise<AcquireResult> {
    const k = this.keys.thread(tenantId, threadId);
    const reply = (await this.acquireScript(
      k.meta,
      k.queue,
      k.runs,
      k.released,
      runId,
      strategy,
      this.now(),
    )) as [string, ...(string | number)[]];
    switch (reply[0]) {
      case 'acquired':
        return { kind: 'acquired' };
      case 'busy':
        return { kind: 'busy', activeRunId: String(reply[1]) };
      case 'queued':
        return { kind: 'queued', position: Number(reply[1]), activeRunId: String(reply[2]) };
      case 'interrupt':
        return { kind: 'interrupt', activeRunId: String(reply[1]) };
      case 'released':
        throw new RunAlreadyReleasedError(threadId, runId);
      default:
        throw new Error(`acquire: unexpected reply ${JSON.stringify(reply)}`);
    }
  }

  /**
   * The run ended: append its new messages to the history, set the thread state (null = keep),
   * clear it as active and promote the next queued run, whose id is returned (null = none).
   * Idempotent per runId: a repeated release changes nothing and returns the run promoted the
   * first time. Releasing a queued run that never started removes it from the queue and writes
   * nothing to the thread (its messages would land in the middle of the active run's).
   */
  async release(
    tenantId: string,
    threadId: string,
    runId: string,
    appendMessages: readonly Message[],
    threadState: Record<string, JsonValue> | null,
  ): Promise<string | null> {
    const k = this.keys.thread(tenantId, threadId);
    const reply = (await this.releaseScript(
      k.meta,
      k.queue,
      k.messages,
      k.state,
      k.released,
      runId,
      threadState === null ? '0' : '1',
      threadState === null ? '' : JSON.stringify(threadState),
      ...appendMessages.map((m) => JSON.stringify(m)),
    )) as [number, string];
    return reply[1] === '' ? null : reply[1];
  }

  /** A consistent snapshot of the thread (one MULTI on one slot). */
  async load(tenantId: string, threadId: string): Promise<ThreadSnapshot> {
    const k = this.keys.thread(tenantId, threadId);
    const results = await this.redis
      .multi()
      .hget(k.meta, 'activeRunId')
      .lrange(k.messages, 0, -1)
      .get(k.state)
      .lrange(k.queue, 0, -1)
      .zrange(k.runs, '0', '-1')
      .exec();
    if (!results) throw new Error('thread load: transaction aborted');
    for (const [err] of results) if (err) throw err;
    const [active, messages, state, queued, runIds] = results.map(([, v]) => v) as [
      string | null,
      string[],
      string | null,
      string[],
      string[],
    ];
    return {
      messages: messages.map((m) => JSON.parse(m) as Message),
      state: state === null ? {} : (JSON.parse(state) as Record<string, JsonValue>),
      activeRunId: active === null || active === '' ? null : active,
      queued,
      runIds,
    };
  }
}
