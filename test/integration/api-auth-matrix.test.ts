/**
 * The authentication and authorization matrix (issue 35): every operation of /openapi.json ×
 * every kind of credential, each answering what docs/http-api.md says ("Tenants", "Managed keys",
 * "End users"). Another tenant's run, and another user's, answers exactly like a missing one.
 *
 * A credential is a row: how to get it (per row, fresh fixtures: a run of the end user alice, its
 * thread, a schedule and a managed key of tenant-a) and what it may do. Rows for Baton-minted run
 * tokens (scoped to run R, one-use, revoked …) are added the same way: a `credential` and an
 * `expect` over the operation and the fixtures.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { CreatedApiKeySchema, ErrorBodySchema, ScheduleDetailSchema } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { LocalIdp, idpEnv } from '@baton/testing/local-idp';

interface Operation {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  /** Public: no credential read (`security: []`). */
  readonly public: boolean;
}

interface Fixtures {
  /** A run alice (an end user of tenant-a) created, on its own thread. */
  readonly runId: string;
  readonly threadId: string;
  readonly scheduleId: string;
  /** A managed key of tenant-a (rotated and revoked by the admin routes' cases). */
  readonly keyId: string;
}

/**
 * What a case must answer: `passes` = authorized, the route's own answer (2xx, or a 4xx about
 * the request itself: 400, 409, 422 …, never 401/403/404); `hidden` = exactly what a missing id
 * answers (404, or 204 for a stream with nothing to send); or a status.
 */
type Expected = 'passes' | 'hidden' | 401 | 403;

interface CredentialRow {
  readonly name: string;
  /** The bearer value (null: none sent). */
  credential(f: Fixtures, env: MatrixEnv): Promise<string | null>;
  expect(op: Operation): Expected;
}

interface MatrixEnv {
  readonly idp: LocalIdp;
  readonly admin: ApiClient;
}

/** Operations that read or act on one run, one thread, one schedule, one managed key. */
const RUN_OPS = new Set([
  'getRun',
  'deleteRun',
  'submitDecisions',
  'cancelRun',
  'streamRunEvents',
  'getRunWebhooks',
]);
const THREAD_OPS = new Set(['getThread', 'deleteThread', 'listThreadRuns', 'aiSdkResumeStream']);
const SCHEDULE_OPS = new Set([
  'getSchedule',
  'deleteSchedule',
  'pauseSchedule',
  'resumeSchedule',
  'listScheduleRuns',
]);
const ADMIN_OPS = new Set(['createApiKey', 'listApiKeys', 'rotateApiKey', 'revokeApiKey']);
/** What an end user of the run's owner may do (docs/http-api.md "End users"). */
const OWNER_OPS = new Set([
  'getRun',
  'submitDecisions',
  'streamRunEvents',
  'listRuns',
  'createRun',
  'getThread',
  'listThreadRuns',
  'aiSdkResumeStream',
  'aiSdkChat',
  'agUiRun',
  'listAgents',
  'getAgent',
]);
/** Of those, what another end user may do too (on their own or new resources). */
const ANY_USER_OPS = new Set(['listRuns', 'createRun', 'listAgents', 'getAgent', 'agUiRun']);
/**
 * Run last in a row: they change the fixtures (a chat turn on alice's thread id starts a thread
 * of that id in the caller's tenant).
 */
const LAST = ['aiSdkChat', 'cancelRun', 'rotateApiKey', 'revokeApiKey', 'deleteSchedule'];

const unauthenticated = (): Expected => 401;

/** Tenant keys of tenant-a (from the environment or managed): everything but admin. */
function tenantKey(op: Operation): Expected {
  return ADMIN_OPS.has(op.id) || op.id === 'metrics' ? 403 : 'passes';
}

const ROWS: CredentialRow[] = [
  { name: 'tenant key', credential: async () => KEYS.a, expect: tenantKey },
  {
    name: "another tenant's key",
    credential: async () => KEYS.b,
    expect: (op) =>
      RUN_OPS.has(op.id) || THREAD_OPS.has(op.id) || SCHEDULE_OPS.has(op.id)
        ? 'hidden'
        : tenantKey(op),
  },
  {
    name: 'admin key',
    credential: async () => KEYS.admin,
    // The admin's own tenant (ops) is another tenant for tenant-a's runs.
    expect: (op) =>
      RUN_OPS.has(op.id) || THREAD_OPS.has(op.id) || SCHEDULE_OPS.has(op.id) ? 'hidden' : 'passes',
  },
  {
    name: 'managed key',
    credential: async (_f, env) =>
      CreatedApiKeySchema.parse(
        (await env.admin.post('/v1/admin/keys', { tenant: 'tenant-a' })).body,
      ).key,
    // /metrics reads the keys of the environment only.
    expect: (op) => (op.id === 'metrics' ? 401 : tenantKey(op)),
  },
  {
    name: 'revoked managed key',
    credential: async (_f, env) => {
      const k = CreatedApiKeySchema.parse(
        (await env.admin.post('/v1/admin/keys', { tenant: 'tenant-a' })).body,
      );
      await env.admin.request('DELETE', `/v1/admin/keys/${k.id}`);
      return k.key;
    },
    expect: unauthenticated,
  },
  {
    name: 'IdP token of the owner',
    credential: async (_f, env) => env.idp.token('alice'),
    // The rest (cancel, delete, webhooks, schedules, admin) needs a key, also for one's own run.
    expect: (op) => (op.id === 'metrics' ? 401 : OWNER_OPS.has(op.id) ? 'passes' : 403),
  },
  {
    name: 'IdP token of another user',
    credential: async (_f, env) => env.idp.token('bob'),
    expect: (op) =>
      op.id === 'metrics'
        ? 401
        : RUN_OPS.has(op.id) || THREAD_OPS.has(op.id)
          ? 'hidden'
          : ANY_USER_OPS.has(op.id)
            ? 'passes'
            : 403,
  },
  {
    name: 'expired IdP token',
    credential: async (_f, env) =>
      env.idp.token('alice', {}, { expiresIn: Math.floor(Date.now() / 1000) - 300 }),
    expect: unauthenticated,
  },
  {
    name: 'IdP token for another audience',
    credential: async (_f, env) => env.idp.token('alice', {}, { audience: 'another-api' }),
    expect: unauthenticated,
  },
  { name: 'garbage', credential: async () => 'Zm9vYmFy.garbage', expect: unauthenticated },
  { name: 'none', credential: async () => null, expect: unauthenticated },
];

function bodyFor(op: Operation, f: Fixtures): unknown {
  const messages = [{ role: 'user', content: 'matrix' }];
  switch (op.id) {
    case 'createRun':
      return { agent: 'assistant', input: { messages } };
    case 'submitDecisions':
      return { decisions: [{ toolCallId: 'call_matrix', action: 'resume' }] };
    case 'aiSdkChat':
      // alice's own thread: a new turn there is hers to start (its run is busy: 409 for her).
      return {
        id: f.threadId,
        trigger: 'submit-message',
        messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'matrix' }] }],
      };
    case 'agUiRun':
      return {
        threadId: `ag-${Math.random().toString(36).slice(2)}`,
        runId: 'ag-1',
        messages: [{ id: 'u1', role: 'user', content: 'matrix' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: { agent: 'assistant' },
      };
    case 'createSchedule':
      return { agent: 'assistant', input: { messages }, everyMs: 3_600_000 };
    case 'createApiKey':
      return { tenant: 'tenant-a' };
    case 'rotateApiKey':
      return { graceSeconds: 0 };
    default:
      return undefined;
  }
}

const MISSING = 'no-such-id-000000000000';

function idFor(op: Operation, f: Fixtures, missing = false): string {
  return missing
    ? MISSING
    : RUN_OPS.has(op.id)
      ? f.runId
      : THREAD_OPS.has(op.id)
        ? f.threadId
        : SCHEDULE_OPS.has(op.id)
          ? f.scheduleId
          : ADMIN_OPS.has(op.id)
            ? f.keyId
            : 'assistant';
}

function pathFor(op: Operation, f: Fixtures, missing = false): string {
  const id = idFor(op, f, missing);
  const path = op.path.replace('{id}', encodeURIComponent(id)).replace('{name}', id);
  return op.id === 'streamRunEvents' ? `${path}?until=suspended` : path;
}

interface Answer {
  readonly status: number;
  readonly code?: string;
  readonly body: string;
}

/** One request; a stream's answer is its status (the body is not waited for). */
async function ask(
  base: string,
  op: Operation,
  path: string,
  credential: string | null,
  body: unknown,
): Promise<Answer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  try {
    const res = await fetch(`${base}${path}`, {
      method: op.method,
      headers: {
        ...(credential === null ? {} : { authorization: `Bearer ${credential}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: controller.signal,
    });
    if ((res.headers.get('content-type') ?? '').includes('event-stream')) {
      controller.abort();
      return { status: res.status, body: '' };
    }
    const text = await res.text();
    const parsed = ErrorBodySchema.safeParse(text.startsWith('{') ? JSON.parse(text) : null);
    return {
      status: res.status,
      body: text,
      ...(parsed.success ? { code: parsed.data.error.code } : {}),
    };
  } finally {
    clearTimeout(timer);
  }
}

describe('every operation × every credential answers what docs/http-api.md says', () => {
  const idp = new LocalIdp();
  let c: ApiCluster;
  let base: string;
  let ops: Operation[];
  let admin: ApiClient;
  let tenantA: ApiClient;

  beforeAll(async () => {
    await idp.start();
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      // Hundreds of refused credentials from one address: no failed-auth nor rate limit here.
      env: { ...idpEnv(idp), AUTH_FAILURES_PER_MINUTE: '0', RATE_LIMIT_PER_MINUTE: '0' },
    });
    base = c.apis[0]!.url;
    admin = new ApiClient(base, KEYS.admin);
    tenantA = new ApiClient(base, KEYS.a);
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; security?: unknown[] }>>;
    };
    ops = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        public: Array.isArray(op.security) && op.security.length === 0,
      })),
    );
    ops.sort((a, b) => LAST.indexOf(a.id) - LAST.indexOf(b.id));
  });
  afterAll(async () => {
    await c?.stop();
    await idp.stop();
  });

  async function fixtures(): Promise<Fixtures> {
    const alice = new ApiClient(base, await idp.token('alice'));
    const { runId, threadId } = await alice.createRun('assistant');
    const schedule = ScheduleDetailSchema.parse(
      (
        await tenantA.post('/v1/schedules', {
          agent: 'assistant',
          input: { messages: [{ role: 'user', content: 'hi' }] },
          everyMs: 3_600_000,
        })
      ).body,
    );
    const key = CreatedApiKeySchema.parse(
      (await admin.post('/v1/admin/keys', { tenant: 'tenant-a' })).body,
    );
    return {
      runId,
      threadId,
      scheduleId: schedule.scheduleId,
      keyId: key.id,
    };
  }

  it('covers every operation of /openapi.json', () => {
    const known = new Set([...RUN_OPS, ...THREAD_OPS, ...SCHEDULE_OPS, ...ADMIN_OPS, ...OWNER_OPS]);
    const rest = ops.filter((op) => !op.public && !known.has(op.id)).map((op) => op.id);
    // Operations without a resource of their own; a new one must be placed in a set above.
    expect(rest.sort()).toEqual(['createSchedule', 'listSchedules', 'metrics']);
  });

  it.each(ROWS.map((row) => [row.name, row] as const))('%s', async (_name, row) => {
    const f = await fixtures();
    const credential = await row.credential(f, { idp, admin });
    const wrong: string[] = [];
    for (const op of ops) {
      const answer = await ask(base, op, pathFor(op, f), credential, bodyFor(op, f));
      if (answer.status >= 500) wrong.push(`${op.id}: ${answer.status} ${answer.body}`);
      if (op.public) {
        if (answer.status !== 200) wrong.push(`${op.id} (public): ${answer.status}`);
        continue;
      }
      const want = row.expect(op);
      if (want === 'passes') {
        if ([401, 403, 404].includes(answer.status))
          wrong.push(`${op.id}: want passes, got ${answer.status} ${answer.body}`);
      } else if (want === 'hidden') {
        // Exactly what the tenant's own key gets for an id that does not exist.
        const none = await ask(base, op, pathFor(op, f, true), KEYS.a, bodyFor(op, f));
        const seen = `${answer.status} ${answer.body.replaceAll(idFor(op, f), '<id>')}`;
        const missing = `${none.status} ${none.body.replaceAll(MISSING, '<id>')}`;
        if (seen !== missing || ![204, 404].includes(answer.status))
          wrong.push(`${op.id}: want "${missing}" as for a missing id, got "${seen}"`);
      } else if (answer.status !== want)
        wrong.push(`${op.id}: want ${want}, got ${answer.status} ${answer.body}`);
    }
    expect(wrong).toEqual([]);
    await tenantA.post(`/v1/runs/${f.runId}/cancel`);
  });
});
