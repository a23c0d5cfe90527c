import {
  ErrorCodeSchema,
  isBatonError,
  type ErrorCode,
  type InternalErrorCode,
} from '@baton/protocol';
import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import {
  BatonApiError,
  BatonClientError,
  errorFromResponse,
  isApiError,
  isClientError,
  parseRetryAfter,
} from './errors.ts';

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

describe('errorFromResponse', () => {
  it('maps every protocol error code to a BatonApiError with that code, status and details', async () => {
    for (const code of ErrorCodeSchema.options) {
      const err = await errorFromResponse(
        json(418, { error: { code, message: `m-${code}`, details: { why: code } } }),
      );
      expect(err).toBeInstanceOf(BatonApiError);
      expect(err).toMatchObject({
        code,
        status: 418,
        message: `m-${code}`,
        details: { why: code },
      });
      expect(isApiError(err, code)).toBe(true);
    }
  });

  it('reads Retry-After into retryAfterMs', async () => {
    const err = await errorFromResponse(
      json(429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '3' }),
    );
    expect(err).toMatchObject({ code: 'rate_limited', retryAfterMs: 3_000 });
  });

  it('a body that is not a Baton error (a proxy page) is unexpected_response with the status', async () => {
    const err = await errorFromResponse(new Response('<html>bad gateway</html>', { status: 502 }));
    expect(err).toBeInstanceOf(BatonClientError);
    expect(err).toMatchObject({ code: 'unexpected_response', status: 502 });
    expect(err.message).toContain('bad gateway');
    expect(isClientError(err, 'unexpected_response')).toBe(true);
    expect(isApiError(err)).toBe(false);
  });

  it('an error code this client does not know is reported as such, not as a known code', async () => {
    const err = await errorFromResponse(
      json(409, { error: { code: 'brand_new_code', message: 'from a newer API' } }),
    );
    expect(err).toMatchObject({ code: 'unexpected_response', status: 409 });
    expect(err.message).toContain('brand_new_code');
    expect(err.message).toContain('from a newer API');
  });
});

describe('the client errors in the one hierarchy', () => {
  it('are BatonErrors: API errors carry wire codes, client-side ones internal codes', () => {
    expectTypeOf<BatonApiError['code']>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<BatonClientError['code']>().toExtend<InternalErrorCode>();
    expectTypeOf<Extract<BatonClientError['code'], ErrorCode>>().toBeNever();
    const api = new BatonApiError('run_done', 'done', { status: 409 });
    const client = new BatonClientError('network', 'down', { cause: new Error('ECONNRESET') });
    expect(isBatonError(api)).toBe(true);
    expect(isBatonError(client)).toBe(true);
    expect(api).toMatchObject({ name: 'BatonApiError', code: 'run_done', status: 409 });
    expect(client).toMatchObject({ name: 'BatonClientError', code: 'network' });
    expect(client.cause).toBeInstanceOf(Error);
  });
});

describe('isApiError', () => {
  it('narrows to the listed codes only', () => {
    const err = new BatonApiError('run_done', 'finished', { status: 409 });
    expect(isApiError(err)).toBe(true);
    expect(isApiError(err, 'run_done', 'thread_busy')).toBe(true);
    expect(isApiError(err, 'thread_busy')).toBe(false);
    expect(isApiError(new Error('x'))).toBe(false);
  });
});

describe('parseRetryAfter', () => {
  it('takes seconds or an HTTP date', () => {
    expect(parseRetryAfter('2')).toBe(2_000);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5_000);
  });
});

describe('the public guards', () => {
  it('recognise errors from another copy of the package, where instanceof does not', async () => {
    vi.resetModules();
    const copy = await import('./errors.ts');
    expect(copy.BatonApiError).not.toBe(BatonApiError);
    const api = new copy.BatonApiError('run_done', 'done', { status: 409 });
    const client = new copy.BatonClientError('network', 'down');
    expect(api instanceof BatonApiError).toBe(false);
    expect(isApiError(api, 'run_done')).toBe(true);
    expect(isApiError(api, 'not_found')).toBe(false);
    expect(isApiError(client)).toBe(false);
    expect(isClientError(client, 'network')).toBe(true);
    expect(isClientError(api)).toBe(false);
    expect(BatonClientError.isInstance(client)).toBe(true);
  });
});
