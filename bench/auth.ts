/**
 * Scenario "auth" (issue 35): what Baton's tokens cost.
 *
 * 1. Verification: TokenService.verify in this process (key set and revocations in memory; no
 *    Redis round trip): a token's first request (ES256 signature check, `BENCH_AUTH_VERIFY_COLD`
 *    distinct tokens) and its later ones (verified-token cache; expiry and revocation checked),
 *    p50/p99 per call. Budget: p99 ≤ 0.2 ms per request.
 * 2. Per request, through the API: GET /v1/runs/:id with the tenant key and with the run's token,
 *    interleaved one by one on one keep-alive socket; the p99 difference.
 * 3. Runs/s, closed loop (http-stack: API and worker child processes): POST /v1/runs and the run's
 *    SSE stream until run.finished, with the tenant key (?publicAccessToken=false: no token at
 *    all) and with tokens (a runs:start token creates the run, the run's publicAccessToken streams
 *    it), in alternating batches in the same stack. Budget: tokens/key ≥ 0.95.
 */
import { performance } from 'node:perf_hooks';
import { Agent } from 'node:http';
import { BatonKeys } from '@baton/runtime/internal';
import { TokenService } from '../apps/api/src/tokens/token-service.ts';
import {
  httpJson,
  mustPost,
  openEvents,
  stackKnobs,
  startStack,
  type Client,
} from './http-stack.ts';
import { BenchError, benchClient, budgetCheck, envInt, round, type Scenario } from './lib.ts';
import { lanes, stats } from './stats.ts';

function knobs() {
  return {
    verifyCalls: envInt('BENCH_AUTH_VERIFY', 20_000, 100),
    coldCalls: envInt('BENCH_AUTH_VERIFY_COLD', 3_000, 100),
    requests: envInt('BENCH_AUTH_REQUESTS', 2_000, 10),
    runs: envInt('BENCH_AUTH_RUNS', 300, 10),
    batches: envInt('BENCH_AUTH_BATCHES', 4, 1),
    inFlight: envInt('BENCH_AUTH_IN_FLIGHT', 20, 1),
    timeoutMs: envInt('BENCH_AUTH_RUN_TIMEOUT_MS', 60_000, 100),
    /** 1: both batches use the tenant key (an A/A check of the batches' noise). */
    aa: envInt('BENCH_AUTH_AA', 0, 0) === 1,
    ...stackKnobs(),
  };
}

const AGENT = 'bench';

async function oneRun(c: Client, withToken: Client | null, label: string, timeoutMs: number) {
  const body = { agent: AGENT, input: { messages: [{ role: 'user', content: label }] } };
  const created = await httpJson(
    withToken ?? c,
    'POST',
    withToken ? '/v1/runs' : '/v1/runs?publicAccessToken=false',
    body,
    timeoutMs,
  );
  if (created.status !== 202)
    throw new BenchError(`POST /v1/runs: HTTP ${created.status} ${created.text.slice(0, 200)}`);
  const { runId, publicAccessToken } = created.body as {
    runId: string;
    publicAccessToken?: string;
  };
  const streamAs = withToken ? { ...c, key: publicAccessToken! } : c;
  const sse = await openEvents(streamAs, runId, { timeoutMs });
  await sse.finished;
  await sse.ended;
}

export const auth: Scenario = {
  name: 'auth',
  description:
    'token verification p99 (in process and per HTTP request) and runs/s with tokens vs with a tenant key, same stack',
  needsRedis: true,
  async run(ctx) {
    const url = ctx.redisUrl;
    if (url === undefined) throw new BenchError('auth needs Redis');
    const k = knobs();
    // 1. verify() alone, on a key set of its own prefix
    const redis = benchClient(url, 'bench-auth');
    const sub = benchClient(url, 'bench-auth-sub');
    const service = new TokenService({
      redis,
      subscriber: sub,
      names: new BatonKeys(`bench-auth-${process.pid}`).tokens,
      issuer: 'bench',
      audience: 'bench',
      maxTtlSeconds: 3600,
      secret: 'bench-secret-0123456789abcdef0123456789',
    });
    let verify;
    try {
      await service.start();
      const principal = {
        tenantId: 'bench',
        admin: false,
        scopes: null,
        credential: { kind: 'api-key' as const },
      };
      const scopes = ['run:read:r1', 'run:decide:r1'];
      // A token's first request: the signature is checked (ES256).
      const fresh: string[] = [];
      for (let i = 0; i < k.coldCalls; i += 1)
        fresh.push((await service.mint(principal, { scopes })).token);
      const cold: number[] = [];
      for (const token of fresh) {
        const t0 = performance.now();
        await service.verify(token);
        cold.push(performance.now() - t0);
      }
      // Its next requests: the verified token is known (expiry and revocation still checked).
      const { token } = await service.mint(principal, { scopes });
      for (let i = 0; i < 1_000; i += 1) await service.verify(token);
      const warm: number[] = [];
      for (let i = 0; i < k.verifyCalls; i += 1) {
        const t0 = performance.now();
        await service.verify(token);
        warm.push(performance.now() - t0);
      }
      verify = { firstRequest: stats(cold), laterRequests: stats(warm) };
      ctx.log(
        `verify: first p50 ${verify.firstRequest.p50} p99 ${verify.firstRequest.p99} ms; later p50 ${verify.laterRequests.p50} p99 ${verify.laterRequests.p99} ms`,
      );
    } finally {
      service.close();
      redis.disconnect();
    }

    const stack = await startStack(ctx, url, {
      label: 'auth',
      logLevel: k.logLevel,
      startTimeoutMs: k.startTimeoutMs,
      apiEnv: { SSE_MAX_PER_TENANT: String(Math.max(100, k.inFlight * 2)) },
      maxSockets: k.inFlight * 2 + 8,
    });
    try {
      const { client } = stack;
      // 2. one request, key vs token, interleaved on one socket
      const created = await mustPost<{ runId: string; publicAccessToken: string }>(
        client,
        '/v1/runs',
        { agent: AGENT, input: { messages: [{ role: 'user', content: 'auth' }] } },
        k.timeoutMs,
      );
      const single = new Agent({ keepAlive: true, maxSockets: 1 });
      const keyClient: Client = { ...client, agent: single };
      const tokenClient: Client = { ...keyClient, key: created.publicAccessToken };
      const path = `/v1/runs/${encodeURIComponent(created.runId)}`;
      const keyMs: number[] = [];
      const tokenMs: number[] = [];
      for (let i = 0; i < k.requests + 200; i += 1) {
        for (const [c, into] of [
          [keyClient, keyMs],
          [tokenClient, tokenMs],
        ] as const) {
          const t0 = performance.now();
          const r = await httpJson(c, 'GET', path, undefined, k.timeoutMs);
          if (r.status !== 200) throw new BenchError(`GET ${path}: HTTP ${r.status}`);
          if (i >= 200) into.push(performance.now() - t0);
        }
      }
      single.destroy();
      const perRequest = { key: stats(keyMs), token: stats(tokenMs) };
      const addedP99 = round(perRequest.token.p99 - perRequest.key.p99, 3);
      ctx.log(`GET run: key p99 ${perRequest.key.p99} ms, token p99 ${perRequest.token.p99} ms`);

      // 3. runs/s: alternating batches, key then tokens
      const starter = await mustPost<{ token: string }>(
        client,
        '/v1/tokens',
        { scopes: ['runs:start'], subject: 'bench-user', expiresIn: 3600, oneUse: false },
        k.timeoutMs,
        201,
      );
      const startClient: Client = { ...client, key: starter.token };
      await lanes(50, k.inFlight, (i) => oneRun(client, null, `warm ${i}`, k.timeoutMs));
      await lanes(50, k.inFlight, (i) => oneRun(client, startClient, `warm ${i}`, k.timeoutMs));
      const elapsed = { key: 0, token: 0 };
      for (let b = 0; b < k.batches; b += 1) {
        for (const mode of b % 2 === 0
          ? (['key', 'token'] as const)
          : (['token', 'key'] as const)) {
          const t0 = performance.now();
          await lanes(k.runs, k.inFlight, (i) =>
            oneRun(
              client,
              mode === 'token' && !k.aa ? startClient : null,
              `${mode} ${b} ${i}`,
              k.timeoutMs,
            ),
          );
          elapsed[mode] += performance.now() - t0;
        }
      }
      const total = k.runs * k.batches;
      const runsPerSec = {
        key: round((total / elapsed.key) * 1000, 1),
        token: round((total / elapsed.token) * 1000, 1),
      };
      const ratio = round(runsPerSec.token / runsPerSec.key, 3);
      ctx.log(`runs/s: key ${runsPerSec.key}, tokens ${runsPerSec.token} (${ratio})`);
      return {
        config: {
          verifyCalls: k.verifyCalls,
          firstVerifyCalls: k.coldCalls,
          requests: k.requests,
          runsPerBatch: k.runs,
          batches: k.batches,
          runsInFlight: k.inFlight,
          agent: AGENT,
          aa: k.aa,
        },
        verifyMs: verify,
        perRequestMs: { ...perRequest, tokenMinusKeyP99: addedP99 },
        runsPerSec: { ...runsPerSec, tokenOverKey: ratio },
        budgets: {
          verifyP99Ms: budgetCheck(verify.laterRequests.p99, 0.2),
          firstVerifyP99Ms: budgetCheck(verify.firstRequest.p99, 0.2),
          runsPerSecTokenOverKey: budgetCheck(ratio, 0.95, 'min'),
        },
      };
    } finally {
      await stack.stop();
    }
  },
};
