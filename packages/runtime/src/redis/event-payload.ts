import type { RunEvent } from '@baton/protocol';

/**
 * The events of one stream entry or pub/sub message: a JSON object (one event) or a JSON array
 * (the events of one write, in seq order).
 */
export function decodeEventPayload(payload: string): RunEvent[] {
  const value = JSON.parse(payload) as RunEvent | RunEvent[];
  return Array.isArray(value) ? value : [value];
}
