/**
 * Fuzz: thousands of generated requests against every route of /openapi.json (plus Bull Board's
 * read API), on a real API server, real workers and a real Redis. Bodies, headers, ids, query
 * strings and encodings are generated; the only assertion is the contract for bad input: no 5xx,
 * every answer arrives, and the process still serves and still runs agents afterwards. Twice:
 * on Redis alone, and with the archive on (ARCHIVE_URL, a finished run only PostgreSQL holds),
 * where a value PostgreSQL refuses (a forged cursor, a NUL in a filter) once answered 500.
 */
import { request } from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import type { RunSnapshot } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { createTestDatabase, type TestDatabase } from '@baton/testing/postgres';
import { waitFor } from '@baton/testing/worker-harness';

/** Requests per variant: without the archive, and with it (PostgreSQL reads answer too). */
const NUM_REQUESTS = { redis: 2_400, archive: 1_600 } as const;

interface FuzzRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | undefined;
}

interface Outcome {
  readonly status: number | 'timeout' | 'error';
  readonly body: string;
}

/** Sends one request; for a stream, the status line is enough (it is closed right away). */
function send(base: string, r: FuzzRequest): Promise<Outcome> {
  return new Promise((resolve) => {
    let req: ReturnType<typeof request>;
    try {
      // A fresh connection each: a keep-alive socket the server closed after refusing an unread
      // body (Connection: close) could otherwise be picked for the next request.
      req = request(`${base}${r.path}`, { method: r.method, headers: r.headers, agent: false });
    } catch (error) {
      // The client refused to send it (e.g. a header value Node will not write): not our case.
      resolve({ status: 0, body: String(error) });
      return;
    }
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ status: 'timeout', body: '' });
    }, 10_000);
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if ((res.headers['content-type'] ?? '').includes('event-stream')) {
        clearTimeout(timer);
        res.destroy();
        resolve({ status, body: '' });
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 2_000) body += chunk;
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status, body });
      });
      res.on('error', () => undefined);
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      // The server may hang up on a request it refused unread (Connection: close): not a 5xx.
      resolve({ status: 'error', body: error.message });
    });
    if (r.body !== undefined) req.end(r.body);
    else req.end();
  });
}

/** The Content-Encoding each generated body claims ('liar-gzip': a plain body that says gzip). */
const ENCODING_HEADER: Readonly<Record<string, string>> = {
  gzip: 'gzip',
  deflate: 'deflate',
  'liar-gzip': 'gzip',
  br: 'br',
  zzz: 'zzz',
};

const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
const ODD_RAW = ['%ZZ', '%', '%00', '%E0%A4%A', '%2F..%2F', '%C0%AF', '%FF%FE', '..', '.', '%20'];

/** Cursors of the right encoding no page handed out: values a store's columns refuse. */
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const FORGED_CURSORS = [
  b64([1.5, 'x']),
  b64([-1e308, '']),
  b64([2 ** 63, 'x']),
  b64([1e21, 'run-x']),
  b64([1, 'a\0b']),
  b64([1, 'run-x']),
  b64(['1', 'x']),
  String(2 ** 63),
  '%00',
];

describe.each(['redis', 'archive'] as const)('fuzz (%s): no bad input gets a 5xx', (variant) => {
  const numRequests = NUM_REQUESTS[variant];
  let c: ApiCluster;
  let db: TestDatabase | undefined;
  let a: ApiClient;
  let paths: [string, string][];
  let known: {
    runA: string;
    runB: string;
    threadA: string;
    call: string;
    /** A finished run only PostgreSQL still has (the redis variant: one Redis has). */
    archived: string;
    archivedThread: string;
  };
  beforeAll(async () => {
    if (variant === 'archive') db = await createTestDatabase('api_fuzz');
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: {
        CORS_ORIGINS: 'https://app.example.com',
        // the fuzzer sends thousands of wrong keys from one address
        AUTH_FAILURES_PER_MINUTE: '0',
        BODY_LIMIT_BYTES: '65536',
        SSE_MAX_PER_TENANT: '1000',
      },
      ...(db
        ? {
            shared: {
              ARCHIVE_URL: db.url,
              ARCHIVE_INTERVAL_MS: '50',
              // finished runs leave Redis a second after the archive has them
              EVENT_RETENTION_SECONDS: '1',
            },
          }
        : {}),
    });
    a = new ApiClient(c.apis[0]!.url, KEYS.a);
    const runA = await a.createRun('assistant');
    const runB = await a.withKey(KEYS.b).createRun('assistant');
    await a.stream(`/v1/runs/${runA.runId}/events?until=suspended`);
    const snap = (await a.get<RunSnapshot>(`/v1/runs/${runA.runId}`)).body;
    // A finished run (the assistant asks for no approval unless told to deploy), with a fairness key.
    const done = await a.createRun('assistant', 'hello fuzz', {
      options: { fairnessKey: 'user-1' },
    });
    await a.stream(`/v1/runs/${done.runId}/events`, { timeoutMs: 30_000 });
    if (db)
      await waitFor(
        async () => (await c.h.client.redis.exists(c.h.client.keys.run(done.runId).cp)) === 0,
        30_000,
        `run ${done.runId} gone from Redis (archived)`,
      );
    known = {
      runA: runA.runId,
      runB: runB.runId,
      threadA: runA.threadId,
      call: snap.await!.calls[0]!.toolCallId,
      archived: done.runId,
      archivedThread: done.threadId,
    };
    const doc = (await a.get<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json'))
      .body;
    paths = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops).map((m): [string, string] => [m.toUpperCase(), p]),
    );
    paths.push(
      ['GET', '/admin/queues/api/queues'],
      ['GET', '/admin/queues/api/queues/{id}/{id}'],
      ['GET', '/admin/queues/api/redis/stats'],
    );
  });
  afterAll(async () => {
    await c?.stop();
    await db?.drop();
  });

  it(`${numRequests} generated requests across every route: 0 × 5xx, and the process stays live`, async () => {
    expect(paths.length).toBeGreaterThanOrEqual(17);
    const base = c.apis[0]!.url;

    const idArb = fc.oneof(
      fc.constantFrom(
        known.runA,
        known.runB,
        known.threadA,
        known.archived,
        known.archivedThread,
        'no-such-run',
      ),
      fc.constantFrom(...PROTOTYPE_NAMES).map(encodeURIComponent),
      fc.constantFrom(...ODD_RAW),
      fc.string({ maxLength: 40 }).map(encodeURIComponent),
      fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
      fc.stringMatching(/^[A-Za-z0-9._:-]{1,200}$/),
      fc.constant('x'.repeat(300)),
    );
    const queryValue = fc.oneof(
      fc.string({ maxLength: 30 }).map(encodeURIComponent),
      fc.constantFrom(
        ...ODD_RAW,
        'latest',
        'waiting',
        'done',
        'suspended',
        '-1',
        '1e9',
        '0',
        'steps',
        'user-1',
        'tenant-a',
        'assistant',
        '99999999999999999999',
        String(2 ** 31),
      ),
      fc.constantFrom(...FORGED_CURSORS),
      fc.integer().map(String),
    );
    const queryArb = fc
      .array(
        fc.tuple(
          fc.oneof(
            fc.constantFrom(
              'status',
              'agent',
              'thread',
              'cursor',
              'limit',
              'tenant',
              'after',
              'until',
              'fairnessKey',
              'children',
            ),
            fc.constantFrom('activeQueue', 'page', 'jobsPerPage', 'aiSdkMajor', '__proto__', '%ZZ'),
            fc.string({ maxLength: 8 }).map(encodeURIComponent),
          ),
          queryValue,
        ),
        { maxLength: 4 },
      )
      .map((pairs) =>
        pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`,
      );

    const json = fc.jsonValue({ maxDepth: 5 });
    const message = fc.record(
      {
        id: fc.string({ maxLength: 10 }),
        role: fc.oneof(fc.constantFrom('user', 'assistant', 'system', 'tool'), fc.string()),
        content: fc.oneof(fc.string(), json),
        parts: fc.array(
          fc.record(
            {
              type: fc.oneof(
                fc.constantFrom('text', 'tool-deploy_service', 'dynamic-tool', 'step-start'),
                fc.string(),
              ),
              text: fc.string(),
              toolCallId: fc.oneof(
                fc.constant(known.call),
                fc.constantFrom(...PROTOTYPE_NAMES),
                fc.string(),
              ),
              state: fc.constantFrom(
                'approval-responded',
                'output-available',
                'input-available',
                'x',
              ),
              approval: fc.record({ id: fc.string(), approved: fc.boolean() }),
              output: json,
            },
            { requiredKeys: ['type'] },
          ),
          { maxLength: 3 },
        ),
      },
      { requiredKeys: [] },
    );
    const runBody = fc.record(
      {
        agent: fc.oneof(fc.constant('assistant'), fc.string()),
        threadId: idArb,
        input: fc.record({ messages: fc.array(message, { maxLength: 3 }) }),
        options: fc.record(
          {
            stopConditions: fc.array(
              fc.oneof(
                fc.record({
                  type: fc.constant('content_match'),
                  pattern: fc.string(),
                  flags: fc.string({ maxLength: 3 }),
                }),
                fc.record({
                  type: fc.constant('content_match'),
                  pattern: fc.constantFrom(
                    '^(?:.|.){40}Q',
                    '(a|aa)+$',
                    '(?=x)',
                    '\\1',
                    '[',
                    '(?i)done',
                  ),
                }),
                fc.record({
                  type: fc.constantFrom('max_rounds', 'timeout', 'loop_detection'),
                  rounds: fc.integer(),
                  window: fc.integer(),
                }),
              ),
              { maxLength: 3 },
            ),
            metadata: fc.dictionary(fc.string(), fc.string()),
            executionMode: fc.string(),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    );
    const decisionsBody = fc.record({
      decisions: fc.array(
        fc.record(
          {
            decisionId: fc.string(),
            toolCallId: fc.oneof(
              fc.constant(known.call),
              fc.constantFrom(...PROTOTYPE_NAMES),
              fc.string(),
            ),
            action: fc.oneof(fc.constantFrom('resume', 'cancel'), fc.string()),
            payload: json,
          },
          { requiredKeys: ['toolCallId'] },
        ),
        { maxLength: 3 },
      ),
    });
    const chatBody = fc.record(
      {
        id: idArb,
        messages: fc.array(message, { maxLength: 3 }),
        trigger: fc.constantFrom('submit-message', 'regenerate-message', 'x'),
        agent: fc.oneof(fc.constant('assistant'), fc.string()),
        aiSdkMajor: fc.oneof(fc.constantFrom(6, 7), json),
      },
      { requiredKeys: [] },
    );
    const agUiBody = fc.record(
      {
        threadId: fc.oneof(idArb, json),
        runId: fc.oneof(fc.string(), json),
        messages: fc.oneof(fc.array(message, { maxLength: 3 }), json),
        resume: fc.array(
          fc.record({
            interruptId: fc.oneof(fc.constant(known.call), fc.string()),
            status: fc.constantFrom('resolved', 'cancelled', 'maybe'),
            payload: json,
          }),
          { maxLength: 2 },
        ),
        forwardedProps: fc.record({ agent: fc.oneof(fc.constant('assistant'), json) }),
      },
      { requiredKeys: [] },
    );
    const deepText = fc
      .tuple(fc.integer({ min: 10, max: 6_000 }), fc.constantFrom('[', '{"a":'))
      .map(([n, open]) => `${open.repeat(n)}1${(open === '[' ? ']' : '}').repeat(n)}`);
    const bodyText = fc.oneof(
      {
        weight: 3,
        arbitrary: fc
          .oneof(runBody, decisionsBody, chatBody, agUiBody)
          .map((v) => JSON.stringify(v)),
      },
      { weight: 1, arbitrary: json.map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: deepText },
      { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
      { weight: 1, arbitrary: runBody.map((v) => JSON.stringify(v).slice(0, 17)) },
    );
    const bodyArb = fc.option(
      fc.tuple(
        bodyText,
        fc.constantFrom('none', 'gzip', 'deflate', 'liar-gzip', 'br', 'zzz', 'bytes'),
      ),
      { freq: 4 },
    );

    const headersArb = fc.record(
      {
        authorization: fc.constantFrom(
          `Bearer ${KEYS.a}`,
          `Bearer ${KEYS.a}`,
          `Bearer ${KEYS.b}`,
          `Bearer ${KEYS.admin}`,
          'Bearer wrong-key-123456',
          'Basic !!!notbase64',
          `Basic ${Buffer.from(`x:${KEYS.admin}`).toString('base64')}`,
          'Bearer',
          '',
        ),
        'content-type': fc.constantFrom(
          'application/json',
          'application/json',
          'application/json; charset=latin1',
          'application/json; charset=utf-16',
          'text/plain',
          'application/x-www-form-urlencoded',
        ),
        'last-event-id': fc.oneof(
          fc.constantFrom('0', '1', '-1', '1e3', '99999999999999999999'),
          fc.string({ maxLength: 10 }),
        ),
        'idempotency-key': fc.string({ maxLength: 300 }),
        'x-baton-ai-sdk-major': fc.constantFrom('6', '7', '5', 'x'),
        origin: fc.constantFrom('https://app.example.com', 'https://evil.example', 'null'),
        'access-control-request-method': fc.constantFrom('POST', 'GET', 'DELETE'),
      },
      { requiredKeys: ['authorization'] },
    );

    const requestArb: fc.Arbitrary<FuzzRequest> = fc
      .tuple(
        fc.constantFrom(...paths),
        idArb,
        idArb,
        queryArb,
        headersArb,
        bodyArb,
        fc.constantFrom('GET', 'POST', 'OPTIONS', 'PUT', 'DELETE'),
        fc.nat(9),
      )
      .map(([[method, template], id1, id2, query, headers, body, otherMethod, dice]) => {
        let n = 0;
        const path = template.replace(/\{[^}]+\}/g, () => (n++ === 0 ? id1 : id2)) + query;
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(headers))
          // eslint-disable-next-line no-control-regex -- the client itself cannot send these
          if (v !== '' && !/[\u0000-\u001f\u007f-\uffff]/.test(v)) out[k] = v;
        let buf: Buffer | undefined;
        if (body !== null) {
          const [text, encoding] = body;
          const raw = Buffer.from(text);
          const sent = {
            none: raw,
            gzip: gzipSync(raw),
            deflate: deflateSync(raw),
            'liar-gzip': raw,
            br: raw,
            zzz: raw,
            bytes: Buffer.from(raw.map((b) => b ^ 0xa5)),
          }[encoding];
          buf = sent;
          const header = ENCODING_HEADER[encoding];
          if (header !== undefined) out['content-encoding'] = header;
        }
        return { method: dice === 0 ? otherMethod : method, path, headers: out, body: buf };
      });

    // Run lists with a valid key and only their own parameters, so values reach the stores
    // (Redis's and the archive's) instead of stopping at a 401 or an unknown-field 400.
    const listPath = fc.constantFrom(
      '/v1/runs',
      `/v1/threads/${known.threadA}/runs`,
      `/v1/threads/${known.archivedThread}/runs`,
    );
    const listQuery = fc
      .array(
        fc.tuple(
          fc.constantFrom('status', 'agent', 'thread', 'fairnessKey', 'cursor', 'limit', 'tenant'),
          queryValue,
        ),
        { minLength: 1, maxLength: 3 },
      )
      .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`);
    const listArb: fc.Arbitrary<FuzzRequest> = fc
      .tuple(listPath, listQuery, fc.constantFrom(KEYS.a, KEYS.b, KEYS.admin))
      .map(([path, query, key]) => ({
        method: 'GET',
        path: path + query,
        headers: { authorization: `Bearer ${key}` },
        body: undefined,
      }));
    const anyRequest = fc.oneof(
      { weight: 5, arbitrary: requestArb },
      { weight: 1, arbitrary: listArb },
    );

    const failures: string[] = [];
    const statuses = new Map<string, number>();
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(anyRequest, async (r) => {
        const outcome = await send(base, r);
        sent += 1;
        const key = String(outcome.status);
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        const bad =
          outcome.status === 'timeout' ||
          (typeof outcome.status === 'number' && outcome.status >= 500);
        if (bad)
          failures.push(
            `${r.method} ${r.path} ${JSON.stringify(r.headers)} -> ${outcome.status} ${outcome.body.slice(0, 300)}`,
          );
        return !bad;
      }),
      { numRuns: numRequests, endOnFailure: true },
    );
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThanOrEqual(numRequests);
    // most requests must get past the front door, or the fuzzer tests nothing but 401s
    const ok4xx = [...statuses].filter(
      ([s]) => s.startsWith('2') || (s.startsWith('4') && s !== '401'),
    );
    expect(ok4xx.reduce((n, [, count]) => n + count, 0)).toBeGreaterThan(numRequests / 3);

    // still live: health, and a run still goes through a worker to its approval
    expect((await a.get('/healthz')).status).toBe(200);
    const { runId } = await a.createRun('assistant');
    const stream = await a.stream(`/v1/runs/${runId}/events?until=suspended`);
    expect(stream.status).toBe(200);
    expect((await a.get<RunSnapshot>(`/v1/runs/${runId}`)).body.status).toBe('waiting');
  }, 120_000);
});
