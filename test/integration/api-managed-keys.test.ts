import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCli } from '@baton/cli';
import { createDemoAgents } from '@baton/core/testing';
import { ApiKeyListSchema, CreatedApiKeySchema, type CreatedApiKey } from '@baton/protocol';
import { hashKey } from '@baton/api';
import { systemClock } from '@baton/runtime';
import { ApiClient, KEYS, startApiCluster, type ApiCluster } from '@baton/testing/api-harness';

/** Polls `probe` until it answers `want`; the time it took (ms), or Infinity after `withinMs`. */
async function timeUntil(
  probe: () => Promise<number>,
  want: number,
  withinMs = 3_000,
): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < withinMs) {
    if ((await probe()) === want) return performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Infinity;
}

/** `baton args…` in this process (a CLI process takes seconds to start on a loaded machine). */
async function baton(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await createCli({
    stdout,
    stderr,
    stdin: new PassThrough(),
    env,
    signal: new AbortController().signal,
  }).run(args);
  return { code, stdout: out, stderr: err };
}

describe('tenant API keys managed at run time, on two API instances', () => {
  let c: ApiCluster;
  let admin0: ApiClient;
  let api1: ApiClient;
  const status = (key: string) => async () => (await api1.withKey(key).get('/v1/runs')).status;

  beforeAll(async () => {
    c = await startApiCluster(inject('redisUrl'), createDemoAgents(systemClock), { apis: 2 });
    admin0 = new ApiClient(c.apis[0]!.url, KEYS.admin);
    api1 = new ApiClient(c.apis[1]!.url);
  });
  afterAll(async () => {
    await c.stop();
  });

  it('a key created on one API works on the other within 1 s, and stops within 1 s of its revoke', async () => {
    const r = await admin0.post('/v1/admin/keys', { tenant: 'tenant-c', name: 'ci' });
    expect(r.status).toBe(201);
    const key = CreatedApiKeySchema.parse(r.body);
    expect(key.key.startsWith('bk_')).toBe(true);
    expect(await timeUntil(status(key.key), 200)).toBeLessThan(1_000);
    // The key speaks for its tenant only: tenant-a's runs are not its runs.
    const { runId } = await new ApiClient(c.apis[0]!.url, KEYS.a).createRun('assistant');
    expect((await api1.withKey(key.key).get(`/v1/runs/${runId}`)).status).toBe(404);

    const revoked = await admin0.request('DELETE', `/v1/admin/keys/${key.id}`);
    expect(revoked.status).toBe(204);
    const took = await timeUntil(status(key.key), 401);
    expect(took).toBeLessThan(1_000);
    expect((await admin0.request('DELETE', `/v1/admin/keys/${key.id}`)).status).toBe(404);
    // Keys from the environment keep working beside them.
    expect((await api1.withKey(KEYS.a).get('/v1/runs')).status).toBe(200);
    expect((await api1.withKey(KEYS.b).get('/v1/runs')).status).toBe(200);
  });

  it('rotate: the old key works until its grace ends, the new one at once', async () => {
    const first = CreatedApiKeySchema.parse(
      (await admin0.post('/v1/admin/keys', { tenant: 'tenant-c' })).body,
    );
    expect(await timeUntil(status(first.key), 200)).toBeLessThan(1_000);
    const r = await admin0.post(`/v1/admin/keys/${first.id}/rotate`, { graceSeconds: 1 });
    expect(r.status).toBe(201);
    const second = CreatedApiKeySchema.parse(r.body);
    expect(second.tenant).toBe('tenant-c');
    expect(await timeUntil(status(second.key), 200)).toBeLessThan(1_000);
    expect(await status(first.key)()).toBe(200);
    // A second rotation of the same key is refused: one successor only.
    expect((await admin0.post(`/v1/admin/keys/${first.id}/rotate`, {})).status).toBe(409);
    const listed = await admin0.get('/v1/admin/keys?tenant=tenant-c');
    const old = ApiKeyListSchema.parse(listed.body).keys.find((k) => k.id === first.id);
    expect(old).toMatchObject({ status: 'grace', rotatedTo: second.id });
    expect(old?.lastUsedAt).toBeGreaterThan(0);
    // Grace over (1 s from the rotation): refused.
    expect(await timeUntil(status(first.key), 401, 2_500)).toBeLessThan(2_500);
    expect(await status(second.key)()).toBe(200);
  });

  it('list never shows a secret nor its hash; only admin keys manage keys', async () => {
    const created: CreatedApiKey[] = [];
    for (const tenant of ['tenant-d', 'tenant-e'])
      created.push(
        CreatedApiKeySchema.parse((await admin0.post('/v1/admin/keys', { tenant })).body),
      );
    const listed = await admin0.get('/v1/admin/keys');
    const text = JSON.stringify(listed.body);
    for (const k of created) {
      expect(text).toContain(k.id);
      expect(text).not.toContain(k.key);
      expect(text).not.toContain(hashKey(k.key));
    }
    const d = await admin0.get('/v1/admin/keys?tenant=tenant-d');
    expect(ApiKeyListSchema.parse(d.body).keys.every((k) => k.tenant === 'tenant-d')).toBe(true);

    const tenant = new ApiClient(c.apis[1]!.url, KEYS.a);
    expect((await tenant.get('/v1/admin/keys')).status).toBe(403);
    expect((await tenant.post('/v1/admin/keys', { tenant: 'tenant-a' })).status).toBe(403);
    // A managed key is a tenant key: it cannot mint keys.
    expect(
      (await api1.withKey(created[0]!.key).post('/v1/admin/keys', { tenant: 'x' })).status,
    ).toBe(403);
    expect((await admin0.post('/v1/admin/keys', { tenant: 'bad tenant!' })).status).toBe(400);
    expect((await admin0.post('/v1/admin/keys', { tenant: 'ok', extra: 1 })).status).toBe(400);
  });

  it('baton keys create|list|rotate|revoke', async () => {
    const env = { BATON_URL: c.apis[0]!.url, BATON_API_KEY: KEYS.admin };
    const made = await baton(['keys', 'create', 'tenant-f', '--name', 'cli', '--json'], env);
    expect(made.code).toBe(0);
    const key = CreatedApiKeySchema.parse(JSON.parse(made.stdout));
    expect(await timeUntil(status(key.key), 200)).toBeLessThan(1_000);
    const listed = await baton(['keys', 'list', '--tenant', 'tenant-f'], env);
    expect(listed.stdout).toContain(key.id);
    expect(listed.stdout).not.toContain(key.key);
    const rotated = await baton(['keys', 'rotate', key.id, '--grace', '0', '--json'], env);
    const next = CreatedApiKeySchema.parse(JSON.parse(rotated.stdout));
    expect(await timeUntil(status(key.key), 401)).toBeLessThan(1_000);
    expect(await status(next.key)()).toBe(200);
    expect((await baton(['keys', 'revoke', next.id], env)).code).toBe(0);
    expect(await timeUntil(status(next.key), 401)).toBeLessThan(1_000);
    const again = await baton(['keys', 'revoke', next.id], env);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('not_found');
    // A tenant key is refused (exit 3).
    expect((await baton(['keys', 'list'], { ...env, BATON_API_KEY: KEYS.a })).code).toBe(3);
  });
});
