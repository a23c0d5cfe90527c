/**
 * What the HTTP floor's server and worker (bench/http-floor-server.ts, http-floor-worker.ts)
 * share: the chain's job data, the run's keys, the commit script and the pub/sub message format.
 * No Baton code.
 */

/** Data of one job of a floor run's chain (the first one also carries the run's input). */
export interface FloorLink {
  readonly tenant: string;
  readonly runId: string;
  readonly i: number;
  readonly length: number;
  readonly input?: unknown;
}

/** The run's durable event log (a stream whose entry ids are `<seq>-0`) and its channel. */
export function floorKeys(
  prefix: string,
  tenant: string,
  runId: string,
): { stream: string; channel: string } {
  return { stream: `${prefix}:${tenant}:${runId}:events`, channel: `${prefix}:${tenant}:${runId}` };
}

/**
 * One event's commit: XADD with the event's seq as its id, then PUBLISH, atomically (a published
 * event is always in the log, so a reader that subscribed first and read the log second misses
 * nothing). A retried job whose event is already there publishes nothing twice. The entry's one
 * field says whether the event ends the run (`f`) or not (`e`), so no reader parses JSON for it.
 * KEYS[1] stream; ARGV seq, e|f, event JSON, channel, retention seconds (0: none).
 */
export const FLOOR_EMIT_SCRIPT = `
local ok = redis.pcall('XADD', KEYS[1], ARGV[1] .. '-0', ARGV[2], ARGV[3])
if type(ok) == 'table' and ok.err then return 0 end
redis.call('PUBLISH', ARGV[4], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3])
if ARGV[5] ~= '0' then redis.call('EXPIRE', KEYS[1], ARGV[5]) end
return 1
`;

export interface FloorMessage {
  readonly seq: number;
  readonly final: boolean;
  readonly json: string;
}

/** A pub/sub message `<seq> <e|f> <event JSON>`. */
export function parseFloorMessage(message: string): FloorMessage {
  const space = message.indexOf(' ');
  return {
    seq: Number(message.slice(0, space)),
    final: message.charCodeAt(space + 1) === 102, // 'f'
    json: message.slice(space + 3),
  };
}
