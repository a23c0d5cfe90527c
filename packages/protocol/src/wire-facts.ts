/**
 * Facts about the wire that the API, the workers and the client must agree on, written once.
 */
import type { RunEvent } from './events.ts';

/** How far a client follows a run's event stream: until it is done, or until it first waits. */
export type StreamUntil = 'done' | 'suspended';

/** Whether `event` is the last one a stream that follows the run `until` will carry. */
export function endsStream(event: RunEvent, until: StreamUntil): boolean {
  if (event.type !== 'run.finished') return false;
  return event.status === 'done' || (until === 'suspended' && event.status === 'waiting');
}

/**
 * JSON with object keys sorted, so equal values give equal text whatever their key order (tool
 * call signatures, idempotency body hashes). Properties whose value is undefined are left out,
 * as JSON.stringify leaves them out.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * `Retry-After` (seconds or an HTTP date) in milliseconds from `now`; undefined when absent or
 * unusable. A date in the past is 0.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === undefined || value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
