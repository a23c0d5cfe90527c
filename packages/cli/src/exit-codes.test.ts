import { BatonApiError, BatonClientError } from '@baton/client';
import { ErrorCodeSchema, type RunEvent } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { EXIT, exitCodeForError, exitCodeForRunEnd } from './exit-codes.ts';

const finished = (status: 'done' | 'waiting', termination: object): RunEvent =>
  ({
    seq: 9,
    runId: 'r',
    threadId: 't',
    turnId: 'u',
    at: 0,
    type: 'run.finished',
    status,
    termination,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
  }) as RunEvent;

describe('exit codes', () => {
  it('every API error code has a non-zero exit code', () => {
    for (const code of ErrorCodeSchema.options) {
      const exit = exitCodeForError(new BatonApiError(code, 'x', { status: 400 }));
      expect(exit).toBeGreaterThan(1);
    }
    expect(exitCodeForError(new BatonApiError('unauthorized', 'x', { status: 401 }))).toBe(
      EXIT.auth,
    );
    expect(exitCodeForError(new BatonApiError('run_not_found', 'x', { status: 404 }))).toBe(
      EXIT.notFound,
    );
    expect(exitCodeForError(new BatonApiError('run_done', 'x', { status: 409 }))).toBe(
      EXIT.refused,
    );
  });

  it('client-side failures: unreachable is 6, an abort is 130, anything else 1', () => {
    expect(exitCodeForError(new BatonClientError('network', 'x'))).toBe(EXIT.unavailable);
    expect(exitCodeForError(new BatonClientError('reconnect_exhausted', 'x'))).toBe(
      EXIT.unavailable,
    );
    expect(exitCodeForError(new BatonClientError('aborted', 'x'))).toBe(EXIT.interrupted);
    expect(exitCodeForError(new Error('bug'))).toBe(EXIT.internal);
  });

  it('a run end maps to 0 / 10 / 11 / 12', () => {
    expect(exitCodeForRunEnd(finished('done', { kind: 'natural_end' }))).toBe(EXIT.ok);
    expect(exitCodeForRunEnd(finished('done', { kind: 'stopped', code: 'max_rounds' }))).toBe(
      EXIT.ok,
    );
    expect(exitCodeForRunEnd(finished('done', { kind: 'cancelled' }))).toBe(EXIT.runCancelled);
    expect(exitCodeForRunEnd(finished('done', { kind: 'error', message: 'x' }))).toBe(
      EXIT.runFailed,
    );
    expect(exitCodeForRunEnd(finished('waiting', { kind: 'suspended' }))).toBe(EXIT.runWaiting);
    expect(exitCodeForRunEnd(undefined)).toBe(EXIT.unavailable);
  });
});
