import { APICallError } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MODEL_RETRY,
  classifyModelError,
  modelRetryPolicy,
  retryAfter,
  retryDelay,
} from './model-retry.ts';
import { ModelCallTimeoutError } from './errors.ts';

function apiError(
  statusCode: number | undefined,
  headers?: Record<string, string>,
  cause?: unknown,
) {
  return new APICallError({
    message: `status ${statusCode}`,
    url: 'http://provider/v1/chat/completions',
    requestBodyValues: {},
    ...(statusCode !== undefined ? { statusCode } : {}),
    ...(headers ? { responseHeaders: headers } : {}),
    ...(cause !== undefined ? { cause } : {}),
  });
}

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('classifyModelError', () => {
  it.each([429, 408, 409, 500, 502, 503, 529])('retries HTTP %i', (status) => {
    expect(classifyModelError(apiError(status), NOW)).toMatchObject({
      retryable: true,
      reason: `http ${status}`,
    });
  });

  it.each([400, 401, 403, 404, 422])('gives up on HTTP %i', (status) => {
    expect(classifyModelError(apiError(status), NOW).retryable).toBe(false);
  });

  it('carries the Retry-After the provider sent', () => {
    expect(classifyModelError(apiError(429, { 'Retry-After': '7' }), NOW)).toEqual({
      retryable: true,
      reason: 'http 429',
      retryAfterMs: 7000,
    });
  });

  it('retries a stream cut by the network even though the response started with 200', () => {
    const socket = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    const cut = apiError(200, {}, new TypeError('terminated', { cause: socket }));
    expect(classifyModelError(cut, NOW)).toMatchObject({
      retryable: true,
      reason: 'network: UND_ERR_SOCKET',
    });
  });

  it('retries connection failures and timeouts, not programming errors', () => {
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
    });
    expect(classifyModelError(refused, NOW)).toEqual({
      retryable: true,
      reason: 'network: ECONNREFUSED',
    });
    expect(classifyModelError(new ModelCallTimeoutError(5), NOW)).toEqual({
      retryable: true,
      reason: 'timeout',
    });
    expect(classifyModelError(new RangeError('bad'), NOW).retryable).toBe(false);
  });
});

describe('retryAfter', () => {
  it('reads seconds, an HTTP date and retry-after-ms', () => {
    expect(retryAfter({ 'retry-after': '2' }, NOW)).toBe(2000);
    expect(retryAfter({ 'retry-after': '0.5' }, NOW)).toBe(500);
    expect(retryAfter({ 'retry-after': new Date(NOW + 3000).toUTCString() }, NOW)).toBe(3000);
    expect(retryAfter({ 'retry-after': new Date(NOW - 3000).toUTCString() }, NOW)).toBe(0);
    expect(retryAfter({ 'retry-after-ms': '250', 'retry-after': '9' }, NOW)).toBe(250);
  });

  it('ignores what is absent or unreadable', () => {
    expect(retryAfter(undefined, NOW)).toBeUndefined();
    expect(retryAfter({}, NOW)).toBeUndefined();
    expect(retryAfter({ 'retry-after': 'soon' }, NOW)).toBeUndefined();
  });
});

describe('retryDelay', () => {
  const policy = modelRetryPolicy({ baseDelayMs: 100, maxDelayMs: 1000 });

  it('doubles per attempt, jittered between half and all of the step', () => {
    expect(retryDelay(policy, 1, undefined, () => 0)).toBe(50);
    expect(retryDelay(policy, 1, undefined, () => 1)).toBe(100);
    expect(retryDelay(policy, 3, undefined, () => 1)).toBe(400);
    expect(retryDelay(policy, 3, undefined, () => 0)).toBe(200);
  });

  it('never exceeds maxDelayMs', () => {
    expect(retryDelay(policy, 30, undefined, () => 1)).toBe(1000);
  });

  it('waits at least the Retry-After, and gives up when it is past the budget', () => {
    expect(retryDelay(policy, 1, 800, () => 0)).toBe(800);
    expect(retryDelay(policy, 1, 1001, () => 0)).toBeNull();
  });

  it('fills unset fields from the defaults', () => {
    expect(modelRetryPolicy({ maxAttempts: 2 })).toEqual({
      ...DEFAULT_MODEL_RETRY,
      maxAttempts: 2,
    });
  });
});
