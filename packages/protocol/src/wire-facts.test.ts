import { describe, expect, it } from 'vitest';
import type { RunEvent } from './events.ts';
import { canonicalJson, endsStream, parseRetryAfter } from './wire-facts.ts';

function finished(status: 'done' | 'waiting'): RunEvent {
  return {
    type: 'run.finished',
    status,
    runId: 'r',
    seq: 1,
    at: 0,
  } as unknown as RunEvent;
}

describe('endsStream', () => {
  it('ends a done-following stream only when the run is done', () => {
    expect(endsStream(finished('done'), 'done')).toBe(true);
    expect(endsStream(finished('waiting'), 'done')).toBe(false);
  });

  it('ends a suspended-following stream when the run waits too', () => {
    expect(endsStream(finished('waiting'), 'suspended')).toBe(true);
    expect(endsStream(finished('done'), 'suspended')).toBe(true);
    expect(endsStream({ type: 'run.started' } as unknown as RunEvent, 'suspended')).toBe(false);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves undefined properties out', () => {
    expect(canonicalJson({ b: 1, a: [1, { d: 2, c: undefined }] })).toBe('{"a":[1,{"d":2}],"b":1}');
    expect(canonicalJson(undefined)).toBe('null');
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates; absent or unusable is undefined', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('30', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
