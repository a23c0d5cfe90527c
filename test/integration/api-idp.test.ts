/**
 * A tenant's own identity provider (issue 35): JWTs verified against a local JWKS server that
 * rotates its key mid-run, end users limited to their own runs and the allowed agents, and the
 * authorization hook (BATON_AUTHZ) allowing, denying, narrowing and failing closed.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDemoAgents } from '@baton/core/testing';
import { ErrorBodySchema, RunPageSchema } from '@baton/protocol';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { LocalIdp, idpEnv, signingKey } from '@baton/testing/local-idp';

const codeOf = (body: unknown): string => ErrorBodySchema.parse(body).error.code;

describe("a tenant's identity provider", () => {
  const idp = new LocalIdp();
  let c: ApiCluster;
  let base: string;
  let tenantA: ApiClient;
  beforeAll(async () => {
    await idp.start();
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: idpEnv(idp),
    });
    base = c.apis[0]!.url;
    tenantA = new ApiClient(base, KEYS.a);
  });
  afterAll(async () => {
    await c?.stop();
    await idp.stop();
  });

  it('its key rotates mid-run: every request with a fresh token succeeds, without a restart', async () => {
    const failures: string[] = [];
    let ok = 0;
    const call = async (): Promise<void> => {
      const r = await new ApiClient(base, await idp.token('alice')).get('/v1/runs');
      if (r.status === 200) ok += 1;
      else failures.push(`${r.status} ${JSON.stringify(r.body)}`);
    };
    for (let i = 0; i < 10; i += 1) await call();
    const fetchesBefore = idp.fetches;
    // Within the cooldown of the first fetch: the API must wait for it, not refuse.
    await idp.rotate('k2');
    await Promise.all(Array.from({ length: 8 }, call));
    for (let i = 0; i < 10; i += 1) await call();
    await idp.rotate('k3');
    await Promise.all(Array.from({ length: 8 }, call));
    expect(failures).toEqual([]);
    expect(ok).toBe(36);
    // One fetch per rotation, shared by the requests that waited for it.
    expect(idp.fetches - fetchesBefore).toBe(2);
    // A token of the retired key is refused, and made-up kids cost no fetch storm.
    const before = idp.fetches;
    const stale = await signingKey('k1-gone');
    const refused = await Promise.all(
      Array.from({ length: 5 }, async () =>
        new ApiClient(base, await idp.token('alice', {}, { key: stale })).get('/v1/runs'),
      ),
    );
    expect(refused.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    expect(idp.fetches - before).toBeLessThanOrEqual(2);
  });

  it('an end user reads and decides only their own runs, and starts only the allowed agents', async () => {
    const alice = new ApiClient(base, await idp.token('alice'));
    const bob = new ApiClient(base, await idp.token('bob'));
    const { runId } = await alice.createRun('assistant');
    const { runId: keyRun } = await tenantA.createRun('assistant');

    expect((await alice.get(`/v1/runs/${runId}`)).status).toBe(200);
    const missing = await bob.get('/v1/runs/no-such-run');
    const others = await bob.get(`/v1/runs/${runId}`);
    expect(others.status).toBe(404);
    expect(JSON.stringify(others.body).replaceAll(runId, 'X')).toBe(
      JSON.stringify(missing.body).replaceAll('no-such-run', 'X'),
    );
    expect((await alice.get(`/v1/runs/${keyRun}`)).status).toBe(404);
    const decide = { decisions: [{ toolCallId: 'call_1_2', action: 'resume' }] };
    expect((await bob.post(`/v1/runs/${runId}/decisions`, decide)).status).toBe(404);
    // Cancel and delete need a tenant key, also for one's own run.
    expect((await alice.post(`/v1/runs/${runId}/cancel`)).status).toBe(403);

    const listed = RunPageSchema.parse((await alice.get('/v1/runs')).body).runs.map((r) => r.runId);
    expect(listed).toContain(runId);
    expect(listed).not.toContain(keyRun);
    expect(RunPageSchema.parse((await bob.get('/v1/runs')).body).runs).toEqual([]);
    // The tenant key still sees every run.
    const all = RunPageSchema.parse((await tenantA.get('/v1/runs?limit=100')).body).runs;
    expect(all.map((r) => r.runId)).toEqual(expect.arrayContaining([runId, keyRun]));

    const other = await alice.post('/v1/runs', {
      agent: 'researcher',
      input: { messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(other.status).toBe(403);
    expect(codeOf(other.body)).toBe('forbidden');
    expect((await alice.get('/v1/schedules')).status).toBe(403);
    expect((await alice.get('/v1/admin/keys')).status).toBe(403);
    await tenantA.post(`/v1/runs/${runId}/cancel`);
    await tenantA.post(`/v1/runs/${keyRun}/cancel`);
  });

  it('a chat an end user starts through the AI SDK route is theirs: readable by them, not by another user', async () => {
    const chat = async (token: string, id: string): Promise<number> => {
      const controller = new AbortController();
      const res = await fetch(`${base}/v1/ai-sdk/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          id,
          trigger: 'submit-message',
          messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
        }),
        signal: controller.signal,
      });
      controller.abort();
      return res.status;
    };
    const alice = await idp.token('alice');
    const bob = await idp.token('bob');
    const id = `chat-${Date.now()}`;
    expect(await chat(alice, id)).toBe(200);
    expect((await new ApiClient(base, alice).get(`/v1/threads/${id}`)).status).toBe(200);
    expect((await new ApiClient(base, bob).get(`/v1/threads/${id}`)).status).toBe(404);
    expect(await chat(bob, id)).toBe(403);
    const runs = RunPageSchema.parse(
      (await new ApiClient(base, alice).get(`/v1/runs?thread=${id}`)).body,
    );
    expect(runs.runs).toHaveLength(1);
    await tenantA.post(`/v1/runs/${runs.runs[0]!.runId}/cancel`);
  });

  it('refuses expired tokens, another audience, another tenant and garbage with 401', async () => {
    const expired = await idp.token(
      'alice',
      {},
      { expiresIn: Math.floor(Date.now() / 1000) - 120 },
    );
    const cases: [string, string][] = [
      [expired, 'token expired'],
      [await idp.token('alice', {}, { audience: 'someone-else' }), 'audience'],
      ['eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJ4In0.c2lnbmF0dXJl', 'invalid API key'],
      ['not a key at all', 'invalid API key'],
    ];
    for (const [token, message] of cases) {
      const r = await new ApiClient(base, token).get('/v1/runs');
      expect(r.status).toBe(401);
      expect(ErrorBodySchema.parse(r.body).error.message).toContain(message);
    }
  });
});

describe('the authorization hook (BATON_AUTHZ)', () => {
  const idp = new LocalIdp();
  let c: ApiCluster;
  let base: string;
  beforeAll(async () => {
    await idp.start();
    const dir = mkdtempSync(join(tmpdir(), 'baton-authz-'));
    const hook = join(dir, 'authz.mjs');
    writeFileSync(
      hook,
      `export default function authz({ caller, operation, baseline }) {
  if (caller.claims.role === 'boom') throw new Error('the directory is down');
  if (caller.claims.role === 'odd') return 'maybe';
  if (caller.claims.role === 'blocked') return 'deny';
  if (caller.claims.role === 'support' && operation === 'listRuns') return { narrow: { agent: 'assistant' } };
  if (caller.claims.role === 'support' && operation === 'cancelRun') return 'allow';
  return baseline;
}
`,
    );
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), {
      env: idpEnv(idp, { BATON_AUTHZ: hook }),
    });
    base = c.apis[0]!.url;
  });
  afterAll(async () => {
    await c?.stop();
    await idp.stop();
  });

  it('allows, denies, narrows, and refuses (403) when it throws or answers nonsense', async () => {
    const tenantA = new ApiClient(base, KEYS.a);
    const { runId } = await tenantA.createRun('assistant');
    const support = new ApiClient(base, await idp.token('sam', { role: 'support' }));
    // Narrowed to an agent instead of the owner: sees the tenant key's run.
    const seen = RunPageSchema.parse((await support.get('/v1/runs')).body).runs;
    expect(seen.map((r) => r.runId)).toContain(runId);
    expect(seen.every((r) => r.agent === 'assistant')).toBe(true);
    expect((await support.post(`/v1/runs/${runId}/cancel`)).status).toBe(202);

    const blocked = new ApiClient(base, await idp.token('eve', { role: 'blocked' }));
    expect((await blocked.get('/v1/runs')).status).toBe(403);
    expect(await blocked.createRun('assistant').catch((e: Error) => e.message)).toContain('403');

    for (const role of ['boom', 'odd']) {
      const r = await new ApiClient(base, await idp.token('mallory', { role })).get('/v1/runs');
      expect(r.status).toBe(403);
      expect(ErrorBodySchema.parse(r.body).error).toMatchObject({
        code: 'forbidden',
        details: { reason: 'authz_hook_failed' },
      });
    }
    // Tenant keys do not go through the hook.
    expect((await tenantA.get('/v1/runs')).status).toBe(200);
  });
});
