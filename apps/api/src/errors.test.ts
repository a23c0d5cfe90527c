import { BatonError, RunDoneError, UnknownAgentError } from '@baton/core';
import { ErrorCodeSchema } from '@baton/protocol';
import express from 'express';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  RateLimitedError,
  STATUS_BY_CODE,
  errorMiddleware,
  issuePath,
  statusFor,
  toBatonError,
  validationError,
} from './errors.ts';

describe('error mapping', () => {
  it('maps every protocol error code to a status', () => {
    for (const code of ErrorCodeSchema.options)
      expect(STATUS_BY_CODE[code]).toBeGreaterThanOrEqual(400);
    expect(Object.keys(STATUS_BY_CODE).sort()).toEqual([...ErrorCodeSchema.options].sort());
  });

  it.each([
    ['validation_failed', 400],
    ['bad_request', 400],
    ['unauthorized', 401],
    ['forbidden', 403],
    ['not_found', 404],
    ['run_not_found', 404],
    ['run_done', 409],
    ['conflict', 409],
    ['call_not_suspended', 409],
    ['decision_conflict', 409],
    ['thread_busy', 409],
    ['idempotency_conflict', 409],
    ['call_unknown', 409],
    ['payload_too_large', 413],
    ['unsupported_media_type', 415],
    ['payload_invalid', 422],
    ['unknown_agent', 422],
    ['rate_limited', 429],
    ['internal', 500],
  ] as const)('%s -> %i', (code, status) => {
    expect(statusFor(code)).toBe(status);
  });

  it('turns body-parser failures into bad_request / payload_too_large', () => {
    const syntax = Object.assign(new SyntaxError('Unexpected token'), {
      type: 'entity.parse.failed',
    });
    const parsed = toBatonError(syntax);
    expect(parsed.code).toBe('bad_request');
    expect(parsed.message).toContain('not valid JSON');
    const large = Object.assign(new Error('too large'), { type: 'entity.too.large', limit: 100 });
    expect(toBatonError(large)).toMatchObject({
      code: 'payload_too_large',
      details: { limitBytes: 100 },
    });
    expect(toBatonError(new Error('boom'))).toMatchObject({
      code: 'internal',
      message: 'internal error',
    });
    expect(toBatonError(new RunDoneError('r1')).code).toBe('run_done');
    expect(toBatonError(Object.assign(new Error('x'), { code: 'invalid_cursor' })).code).toBe(
      'bad_request',
    );
  });

  it('keeps the 4xx that express, body-parser and http-errors attach; never a 500 for them', () => {
    const status = (props: object, message = 'x', base: Error = new Error(message)) =>
      statusFor(toBatonError(Object.assign(base, props)).code);
    // express' router: a malformed %-escape in a path parameter
    const uri = toBatonError(
      Object.assign(new URIError("Failed to decode param '%ZZ'"), { status: 400 }),
    );
    expect(uri.code).toBe('bad_request');
    expect(uri.message).toMatch(/%-escape/);
    // body-parser: a body that is not what its Content-Encoding says
    const zlib = toBatonError(
      Object.assign(new Error('incorrect header check'), { status: 400, code: 'Z_DATA_ERROR' }),
    );
    expect(zlib.code).toBe('bad_request');
    expect(zlib.message).toMatch(/Content-Encoding/);
    expect(status({ status: 415 })).toBe(415);
    expect(status({ statusCode: 413 })).toBe(413);
    expect(status({ status: 404 })).toBe(404);
    expect(status({ status: 403 })).toBe(403);
    expect(status({ status: 401 })).toBe(401);
    expect(status({ status: 429 })).toBe(429);
    expect(status({ status: 405 })).toBe(400);
    // a 5xx or no status stays internal
    expect(status({ status: 503 })).toBe(500);
    expect(status({})).toBe(500);
  });

  it('names the path of every zod issue, including unknown fields', () => {
    const schema = z.strictObject({
      input: z.strictObject({ messages: z.array(z.strictObject({ content: z.string().min(1) })) }),
    });
    const result = schema.safeParse({ input: { messages: [{ content: '' }], extra: 1 } });
    const err = validationError(result.error!);
    expect(err.code).toBe('validation_failed');
    const issues = (err.details as { issues: { path: string; message: string }[] }).issues;
    expect(issues.map((i) => i.path).sort()).toEqual(['input', 'input.messages[0].content']);
    expect(err.message).toContain('unknown field(s) "extra"');
    expect(issuePath([])).toBe('(body)');
  });

  it('the middleware writes {error: {code, message, details?}} with the mapped status and Retry-After', async () => {
    const app = express();
    app.get('/a', () => {
      throw new UnknownAgentError('x', ['assistant']);
    });
    app.get('/b', () => {
      throw new RateLimitedError('slow down', 2.2);
    });
    app.get('/c', () => {
      throw new BatonError('decision_conflict', 'taken', { toolCallId: 't' });
    });
    app.use(errorMiddleware(pino({ level: 'silent' })));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const a = await fetch(`${base}/a`);
      expect(a.status).toBe(422);
      expect(await a.json()).toEqual({
        error: { code: 'unknown_agent', message: 'unknown agent "x"; known agents: assistant' },
      });
      const b = await fetch(`${base}/b`);
      expect(b.status).toBe(429);
      expect(b.headers.get('retry-after')).toBe('3');
      const c = await fetch(`${base}/c`);
      expect(await c.json()).toEqual({
        error: { code: 'decision_conflict', message: 'taken', details: { toolCallId: 't' } },
      });
    } finally {
      server.close();
    }
  });
});
