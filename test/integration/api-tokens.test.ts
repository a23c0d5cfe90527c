/**
 * Issue 35 items 1–3: Baton-minted tokens on two API instances sharing one Redis. A created run's
 * publicAccessToken reads and decides that run only; JWKS verifies it; a one-use token works once;
 * a revoke closes the streams opened with the token on both APIs within 1 s; a rotated key signs
 * on every API within 1 s while tokens of the old key keep verifying.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BatonClient } from '@baton/client';
import { createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';
import { runCli } from '@baton/testing/cli';
import { testRedis } from '@baton/testing/redis-client';
import { BatonKeys } from '@baton/runtime/internal';
import { TokenService } from '../../apps/api/src/tokens/token-service.ts';
import { waitFor } from '@baton/testing/worker-harness';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';

let c: ApiCluster;
let a0: ApiClient;
let a1: ApiClient;

beforeAll(async () => {
  c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), { apis: 2 });
  a0 = new ApiClient(c.apis[0]!.url, KEYS.a);
  a1 = new ApiClient(c.apis[1]!.url, KEYS.a);
}, 60_000);

afterAll(async () => {
  await c.stop();
});

/** A run of the demo assistant waiting for its deploy approval, with its token. */
async function suspendedRun(): Promise<{ runId: string; token: string; callId: string }> {
  const r = await a0.post<{ runId: string; publicAccessToken: string }>('/v1/runs', {
    agent: 'assistant',
    input: { messages: [{ role: 'user', content: 'deploy please' }] },
  });
  expect(r.status).toBe(202);
  const { runId, publicAccessToken: token } = r.body;
  await a0.stream(`/v1/runs/${runId}/events?until=suspended`);
  const view = await a0.get<{ await: { calls: { toolCallId: string }[] } }>(`/v1/runs/${runId}`);
  return { runId, token, callId: view.body.await.calls[0]!.toolCallId };
}

/** Opens a stream with `token` and resolves with the time it ended (ms since the epoch). */
async function openStream(
  base: string,
  path: string,
  token: string,
): Promise<{ status: number; ended: Promise<number> }> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const reader = res.body!.getReader();
  const ended = (async () => {
    for (;;) {
      const { done } = await reader.read().catch(() => ({ done: true }));
      if (done) return Date.now();
    }
  })();
  return { status: res.status, ended };
}

describe('a created run carries a token for that run only', () => {
  it('reads, streams and decides its run; nothing else', async () => {
    const { runId, token, callId } = await suspendedRun();
    const other = await suspendedRun();
    const t0 = a0.withKey(token);
    const t1 = a1.withKey(token);
    expect((await t1.get(`/v1/runs/${runId}`)).status).toBe(200);
    // another run of the same tenant: as if it did not exist
    const hidden = await t0.get<{ error: { code: string } }>(`/v1/runs/${other.runId}`);
    expect([hidden.status, hidden.body.error.code]).toEqual([404, 'run_not_found']);
    // the agents' list is open to every credential of the tenant (docs/http-api.md, Tokens)
    expect((await t0.get('/v1/agents')).status).toBe(200);
    expect((await t0.get('/v1/runs')).status).toBe(403);
    expect((await t0.request('DELETE', `/v1/runs/${runId}`)).status).toBe(403);
    expect((await t0.post('/v1/tokens', { scopes: ['runs:own'] })).status).toBe(403);
    // EventSource cannot send headers: the token in the query string, on a stream route only
    const q = encodeURIComponent(token);
    const byQuery = await fetch(
      `${c.apis[1]!.url}/v1/runs/${runId}/events?until=suspended&access_token=${q}`,
    );
    expect(byQuery.status).toBe(200);
    expect(await byQuery.text()).toContain('tool_call.suspended');
    expect((await fetch(`${c.apis[1]!.url}/v1/runs/${runId}?access_token=${q}`)).status).toBe(401);
    const decided = await t1.post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ toolCallId: callId, action: 'resume', payload: { comment: 'ok' } }],
    });
    expect(decided.status).toBe(202);
    await t0.stream(`/v1/runs/${runId}/events`);
    await a0.post(`/v1/runs/${other.runId}/cancel`);
  });

  it('verifies against /.well-known/jwks.json with the claims docs/http-api.md lists', async () => {
    const r = await a0.post<{ publicAccessToken: string; runId: string }>(
      '/v1/runs?publicAccessToken=true',
      { agent: 'assistant', input: { messages: [{ role: 'user', content: 'hi' }] } },
    );
    const jwks = await (await fetch(`${c.apis[1]!.url}/.well-known/jwks.json`)).json();
    for (const key of (jwks as { keys: Record<string, unknown>[] }).keys)
      expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    const { payload, protectedHeader } = await jwtVerify(
      r.body.publicAccessToken,
      createLocalJWKSet(jwks as never),
      { issuer: 'baton', audience: 'baton' },
    );
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload).toMatchObject({
      tenant: 'tenant-a',
      scopes: [`run:read:${r.body.runId}`, `run:decide:${r.body.runId}`],
    });
    expect(payload.exp! - payload.iat!).toBe(900);
    const off = await a0.post<Record<string, unknown>>('/v1/runs?publicAccessToken=false', {
      agent: 'assistant',
      input: { messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(off.body['publicAccessToken']).toBeUndefined();
  });

  it('a one-use agent:start token starts one run, owned by its subject', async () => {
    const minted = await a0.post<{ token: string; oneUse: boolean }>('/v1/tokens', {
      scopes: ['agent:start:assistant'],
      subject: 'user-7',
    });
    expect([minted.status, minted.body.oneUse]).toEqual([201, true]);
    const body = { agent: 'assistant', input: { messages: [{ role: 'user', content: 'hi' }] } };
    const first = await a1
      .withKey(minted.body.token)
      .post<{ runId: string; publicAccessToken: string }>('/v1/runs', body);
    expect(first.status).toBe(202);
    expect((await a0.withKey(minted.body.token).post('/v1/runs', body)).status).toBe(401);
    // the run's own token reads it; the run names its owner
    const view = await a0
      .withKey(first.body.publicAccessToken)
      .get<{ owner?: string }>(`/v1/runs/${first.body.runId}`);
    expect(view.body.owner).toBe('user-7');
    // another agent: 403 (the scope says which agent)
    const other = await a0.post<{ token: string }>('/v1/tokens', {
      scopes: ['agent:start:assistant'],
    });
    expect(
      (
        await a0
          .withKey(other.body.token)
          .post('/v1/runs', { ...body, agent: 'parallel-assistant' })
      ).status,
    ).toBe(403);
  });
});

describe('revocation', () => {
  it('closes the streams opened with the token on both APIs within 1 s, and refuses it', async () => {
    const { runId, token } = await suspendedRun();
    // until=done: the streams stay open while the run waits for its approval
    const s0 = await openStream(c.apis[0]!.url, `/v1/runs/${runId}/events`, token);
    const s1 = await openStream(c.apis[1]!.url, `/v1/runs/${runId}/events`, token);
    expect([s0.status, s1.status]).toEqual([200, 200]);
    const jti = (
      JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { jti: string }
    ).jti;
    const revokedAt = Date.now();
    expect((await a1.post('/v1/tokens/revoke', { tokenId: jti })).status).toBe(202);
    const ends = await Promise.all([s0.ended, s1.ended]);
    for (const end of ends) expect(end - revokedAt).toBeLessThan(1_000);
    expect((await a0.withKey(token).get(`/v1/runs/${runId}`)).status).toBe(401);
    await a0.post(`/v1/runs/${runId}/cancel`);
  });

  it('revoking a subject closes its streams and refuses its tokens, not later ones', async () => {
    const { runId } = await suspendedRun();
    const minted = await a0.post<{ token: string }>('/v1/tokens', {
      scopes: [`run:read:${runId}`],
      subject: 'user-9',
    });
    const s1 = await openStream(c.apis[1]!.url, `/v1/runs/${runId}/events`, minted.body.token);
    expect(s1.status).toBe(200);
    const revokedAt = Date.now();
    expect((await a0.post('/v1/tokens/revoke', { subject: 'user-9' })).status).toBe(202);
    expect((await s1.ended) - revokedAt).toBeLessThan(1_000);
    expect((await a1.withKey(minted.body.token).get(`/v1/runs/${runId}`)).status).toBe(401);
    await a0.post(`/v1/runs/${runId}/cancel`);
  });
});

describe('signing key rotation', () => {
  it('a new key signs on every API within 1 s; tokens of the old one keep verifying', async () => {
    const before = await a0.post<{ token: string; runId: string; publicAccessToken: string }>(
      '/v1/runs',
      { agent: 'assistant', input: { messages: [{ role: 'user', content: 'hi' }] } },
    );
    const oldKid = decodeProtectedHeader(before.body.publicAccessToken).kid;
    const admin = new ApiClient(c.apis[0]!.url, KEYS.admin);
    expect((await a0.post('/v1/admin/token-keys/rotate')).status).toBe(403);
    const rotated = await admin.post<{ kid: string }>('/v1/admin/token-keys/rotate');
    expect(rotated.status).toBe(201);
    const started = Date.now();
    await waitFor(async () => {
      const m = await a1.post<{ token: string }>('/v1/tokens', { scopes: ['runs:own'] });
      return decodeProtectedHeader(m.body.token).kid === rotated.body.kid;
    }, 2_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(rotated.body.kid).not.toBe(oldKid);
    const old = a1.withKey(before.body.publicAccessToken);
    expect((await old.get(`/v1/runs/${before.body.runId}`)).status).toBe(200);
    const listed = await admin.get<{ keys: Record<string, unknown>[] }>('/v1/admin/token-keys');
    expect(JSON.stringify(listed.body)).not.toMatch(/"d"|privateJwk|privateJwe/);
  });
});

describe('@baton/client with a token', () => {
  it('gets a token from getToken, and a new one once on 401', async () => {
    const { runId } = await suspendedRun();
    const server = new BatonClient({ baseUrl: c.apis[0]!.url, apiKey: KEYS.a });
    const first = await server.tokens.mint({ scopes: [`run:read:${runId}`], subject: 'u-1' });
    await server.tokens.revoke({ tokenId: first.tokenId });
    const handed: string[] = [first.token];
    let calls = 0;
    const browser = new BatonClient({
      baseUrl: c.apis[1]!.url,
      getToken: async () => {
        calls += 1;
        const next = handed.shift();
        if (next !== undefined) return next;
        return (await server.tokens.mint({ scopes: [`run:read:${runId}`], subject: 'u-1' })).token;
      },
    });
    // the first token is revoked: 401, a new one, the same request again
    expect((await browser.runs.get(runId)).runId).toBe(runId);
    expect(calls).toBe(2);
    expect((await browser.runs.get(runId)).runId).toBe(runId);
    expect(calls).toBe(2);
    const events = [];
    for await (const e of browser.runs.stream(runId, { until: 'suspended' })) events.push(e.type);
    expect(events).toContain('tool_call.suspended');
    // a token that cannot read the run: 404, not a refresh loop
    await expect(browser.runs.get('no-such-run')).rejects.toMatchObject({ status: 404 });
    expect(calls).toBe(2);
    await server.runs.cancel(runId);
  });
});

describe('baton tokens', () => {
  it('mints, revokes and rotates from the command line', async () => {
    const env = { BATON_URL: c.apis[0]!.url, BATON_API_KEY: KEYS.a };
    const { runId } = await suspendedRun();
    const minted = await runCli(['tokens', 'mint', '-s', `run:read:${runId}`, '--json'], env);
    expect(minted.code).toBe(0);
    const { token, tokenId } = JSON.parse(minted.stdout) as { token: string; tokenId: string };
    expect((await a1.withKey(token).get(`/v1/runs/${runId}`)).status).toBe(200);
    expect((await runCli(['tokens', 'revoke', '--token-id', tokenId], env)).code).toBe(0);
    expect((await a1.withKey(token).get(`/v1/runs/${runId}`)).status).toBe(401);
    expect((await runCli(['tokens', 'revoke'], env)).code).toBe(2);
    expect((await runCli(['tokens', 'rotate-key'], env)).code).toBe(3);
    const rotated = await runCli(['tokens', 'rotate-key'], { ...env, BATON_API_KEY: KEYS.admin });
    expect([rotated.code, rotated.stdout]).toEqual([0, expect.stringMatching(/^signing with \S+/)]);
    await a0.post(`/v1/runs/${runId}/cancel`);
  }, 120_000);
});

describe('signing keys at rest', () => {
  it('are encrypted under TOKEN_SIGNING_SECRET; another secret cannot load them', async () => {
    const url = inject('redisUrl');
    const names = new BatonKeys(`tokens-at-rest-${Date.now()}`).tokens;
    const service = (secret: string): TokenService =>
      new TokenService({
        redis: testRedis(url),
        subscriber: testRedis(url),
        names,
        issuer: 'baton',
        audience: 'baton',
        maxTtlSeconds: 3600,
        secret,
      });
    const secret = 'at-rest-secret-0123456789abcdef0123456789';
    const first = service(secret);
    await first.start();
    const raw = testRedis(url);
    const stored = Object.values(await raw.hgetall(names.keys));
    expect(stored).toHaveLength(1);
    expect(stored[0]).toContain('privateJwe');
    expect(stored[0]).not.toMatch(/"d":/);
    const other = service('another-secret-0123456789abcdef0123456789');
    await expect(other.start()).rejects.toThrow();
    first.close();
    other.close();
    raw.disconnect();
  });
});
