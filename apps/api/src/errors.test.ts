import { BatonError, RunDoneError, UnknownAgentError, VersionConflictError } from '@baton/core';
import {
  ErrorCodeSchema,
  type BatonErrorCode,
  type ErrorCode,
  type InternalErrorCode,
} from '@baton/protocol';
import { DurabilityError, InvalidCursorError, InvalidScheduleCursorError } from '@baton/runtime';
import express from 'express';
import { ReplyError } from 'ioredis';
import { pino } from 'pino';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  PUBLIC_FORM_OF,
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

  it('gives every code, public and internal, a status (type test: a new code fails to compile)', () => {
    expectTypeOf<keyof typeof STATUS_BY_CODE>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<keyof typeof PUBLIC_FORM_OF>().toEqualTypeOf<InternalErrorCode>();
    const statusOf = (code: BatonErrorCode): number =>
      code in STATUS_BY_CODE
        ? STATUS_BY_CODE[code as ErrorCode]
        : STATUS_BY_CODE[PUBLIC_FORM_OF[code as InternalErrorCode].code];
    for (const code of [...ErrorCodeSchema.options, ...Object.keys(PUBLIC_FORM_OF)])
      expect(statusOf(code as BatonErrorCode)).toBeGreaterThanOrEqual(400);
    // Internal codes never reach the wire as such: each becomes a public code.
    for (const form of Object.values(PUBLIC_FORM_OF))
      expect(ErrorCodeSchema.options).toContain(form.code);
  });

  it('never answers 500 for an escaped version conflict: 503 unavailable, to be retried', () => {
    const conflict = toBatonError(new VersionConflictError('r1', 3, 4));
    expect(conflict.code).toBe('unavailable');
    expect(statusFor(conflict.code)).toBe(503);
    // Versions are the server's business; the client only needs to know to retry.
    expect(conflict.message).not.toContain('version');
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
    // The stores' cursor errors (recognised by their class's code, not by duck-typing).
    expect(toBatonError(new InvalidCursorError()).code).toBe('bad_request');
    expect(toBatonError(new InvalidScheduleCursorError()).code).toBe('bad_request');
    expect(toBatonError(new DurabilityError('no fsync')).code).toBe('unavailable');
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
    app.get('/d', () => {
      throw new VersionConflictError('r1', 3, 4);
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
      // A conflict that escaped every retry: the request was fine, the same one will succeed.
      const d = await fetch(`${base}/d`);
      expect(d.status).toBe(503);
      expect(d.headers.get('retry-after')).toBe('1');
      expect(await d.json()).toEqual({
        error: {
          code: 'unavailable',
          message:
            'the run was changed concurrently while this request was handled; retry it shortly',
        },
      });
    } finally {
      server.close();
    }
  });
});

describe('a Redis Cluster between topologies', () => {
  it('is 503 unavailable with Retry-After, never 500', async () => {
    const reply = (message: string): Error =>
      new (ReplyError as new (message: string) => Error)(message);
    const thrown = [
      reply('CLUSTERDOWN The cluster is down'),
      reply('TRYAGAIN Multiple keys request during rehashing of slot'),
      reply('MOVED 8105 127.0.0.1:7102'),
      new Error(
        'Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down',
      ),
      new Error('None of startup nodes is available'),
    ];
    for (const err of thrown) expect(toBatonError(err).code).toBe('unavailable');
    const app = express();
    thrown.forEach((err, i) =>
      app.get(`/${i}`, () => {
        throw err;
      }),
    );
    app.use(errorMiddleware(pino({ level: 'silent' })));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      for (let i = 0; i < thrown.length; i += 1) {
        const res = await fetch(`${base}/${i}`);
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unavailable');
      }
    } finally {
      server.close();
    }
  });
});
