import { BatonRuntime, type BatonLogger, type RedisClient } from '@baton/runtime';
import { ScheduleService, duplicateClient, toPino } from '@baton/runtime/internal';
import type { Clock } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import express, { type Express, type RequestHandler, type Router } from 'express';
import { BULL_BOARD_PATH, BoardQueues, bullBoardGuard, bullBoardRouter } from './admin.ts';
import { jsonBody } from './body.ts';
import { corsMiddleware, parseCorsOrigins } from './cors.ts';
import { appRouteMethods } from './internals/express/route-methods.ts';
import { KeyStore, authenticate, requireAdmin } from './auth.ts';
import { TokenService } from './tokens/token-service.ts';
import { jwksRouter, tokensRouter } from './routes/tokens.ts';
import { consoleRouter } from './console.ts';
import { splitEntries, tenantKeyEntries, type ApiConfig } from './config.ts';
import type { ApiContext } from './context.ts';
import { errorMiddleware, notFoundHandler } from './errors.ts';
import { runtimeHealth } from './health.ts';
import { IdempotencyStore } from './idempotency.ts';
import {
  AuthFailureLimiter,
  SseConnectionLimiter,
  rateLimit,
  waitpointRateLimit,
} from './limits.ts';
import { protocolPlugins } from './adapters/plugins.ts';
import type { ApiPlugin } from './plugin.ts';
import { API_REDACT_PATHS, createApiLogger, httpLogger } from './logger.ts';
import { ApiMetrics, observeMessage } from './metrics.ts';
import { metricsAuth } from './metrics-auth.ts';
import { MANAGED_KEY_PREFIX, ManagedKeyStore } from './managed-keys.ts';
import { adminKeysRouter } from './routes/admin-keys.ts';
import { idpTenants } from './idp/idp-config.ts';
import { IdpVerifier } from './idp/idp-verifier.ts';
import { loadAuthzHook } from './authz/authz-hook.ts';
import { authorizeRequest } from './authz/authorize-request.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { agentsRouter } from './routes/agents.ts';
import { eventsRouter } from './routes/events.ts';
import { opsRouter } from './routes/ops.ts';
import { runsRouter } from './routes/runs.ts';
import { schedulesRouter } from './routes/schedules.ts';
import { threadsRouter } from './routes/threads.ts';
import { httpTracing } from './tracing.ts';
import { webhooksRouter } from './routes/webhooks.ts';
import { waitpointRouter, waitsRouter } from './routes/waits.ts';
import { parseTenantWebhooks } from './webhooks/tenant-webhooks.ts';
import { ShutdownGate } from './shutdown-gate.ts';

export interface CreateAppOptions {
  readonly config: ApiConfig;
  /** Shared stores and queues; created (and closed by close()) when absent. */
  readonly runtime?: BatonRuntime;
  /**
   * Your own ioredis `Redis` or `Cluster` instance, as createWorker({ redis }) takes it
   * (config.REDIS_URL is then ignored): the API uses it, duplicates it for BullMQ and its
   * subscriptions, and never closes it. Give it fail-fast options (createRedisClient with the
   * 'api' role builds one): requests during an outage should get 503 at once, not wait.
   * Ignored when `runtime` is given.
   */
  readonly redis?: RedisClient;
  /**
   * Where the API logs: pino, or any logger with `debug`/`info`/`warn`/`error`/`child` (secrets
   * are redacted before a line reaches it).
   *
   * @default pino, JSON lines on stdout at `config.LOG_LEVEL`
   */
  readonly logger?: BatonLogger;
  /** API keys; built from config (API_KEYS, API_KEYS_FILE, ADMIN_KEYS) when absent. */
  readonly keys?: KeyStore;
  readonly clock?: Clock;
  /** Extra routers; default: the front-end protocol adapters (protocolPlugins()). */
  readonly plugins?: readonly ApiPlugin[];
  /** Built run console served at /console (default: apps/console/dist); false: not served. */
  readonly consoleDir?: string | false;
}

export interface ApiApp {
  readonly app: Express;
  readonly context: ApiContext;
  /**
   * The runtime the app was built on, for its owner (tests, an embedder's shutdown). Routes and
   * adapters never see it (lint forbids `.runtime` there): run data goes through the service.
   */
  readonly runtime: BatonRuntime;
  /** Ends open streams and releases Redis connections (the HTTP server is closed by its owner). */
  close(): Promise<void>;
}

/** TRUST_PROXY as express reads it: a boolean, a hop count, or subnets/addresses. */
function trustProxy(value: string): boolean | number | string {
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** The routes under /v1 (mounted behind auth, rate limit and body parsing). */
export function v1Router(context: ApiContext): Router {
  const v1 = express.Router();
  v1.use(tokensRouter(context));
  v1.use(runsRouter(context), eventsRouter(context), threadsRouter(context), agentsRouter(context));
  v1.use(schedulesRouter(context)); // scheduled runs
  v1.use(webhooksRouter(context));
  v1.use(waitsRouter(context));
  v1.use(adminKeysRouter(context));
  return v1;
}

/** Builds the express app from injected dependencies. */
export async function createApp(opts: CreateAppOptions): Promise<ApiApp> {
  const { config } = opts;
  const logger = opts.logger
    ? toPino(opts.logger, API_REDACT_PATHS)
    : createApiLogger(config.LOG_LEVEL);
  const tenantWebhooks = parseTenantWebhooks(config);
  // Tenants' own identity providers and the authorization hook: read (and refused) at start.
  const idp = new IdpVerifier(idpTenants(config));
  const authzHook = config.BATON_AUTHZ ? await loadAuthzHook(config.BATON_AUTHZ) : undefined;
  const ownsRuntime = opts.runtime === undefined;
  const runtime =
    opts.runtime ??
    new BatonRuntime({ config, logger, clock: opts.clock, role: 'api', redis: opts.redis });
  const tenantEntries = opts.keys === undefined ? tenantKeyEntries(config) : [];
  const keys = opts.keys ?? new KeyStore(tenantEntries, splitEntries(config.ADMIN_KEYS));
  if (keys.size === 0)
    logger.warn(
      'no API keys configured (API_KEYS / API_KEYS_FILE / ADMIN_KEYS): every /v1 request will be refused',
    );
  else if (opts.keys === undefined && tenantEntries.length === 0)
    logger.warn(
      'no tenant API keys configured (API_KEYS / API_KEYS_FILE): only admin keys can call /v1',
    );
  // Requests fail fast while Redis is away (503); at start-up give it a moment to connect first,
  // and refuse to start against a Redis of another kind than REDIS_URL says (a cluster node) or,
  // in strict durability mode, one that cannot keep the promise.
  const redisReady = await runtime.waitUntilReady(5_000);
  if (redisReady) {
    await runtime.checkRedis();
    await warmStepQueues(runtime, 5_000);
  } else logger.warn('redis is not reachable yet; requests get 503 until it is');
  // Webhooks: every run of these tenants also reports to the tenant's endpoint.
  runtime.webhooks.tenantWebhooks = tenantWebhooks;
  const metrics = new ApiMetrics(runtime, { eventMetrics: config.EVENT_METRICS });
  // Step/tool/finished-run metrics come from the counts every committing process adds to Redis
  // (no subscription to every run); the subscriber only hears the runs this instance streams, and
  // their live messages give the pub/sub lag.
  // RunService.openEvents streams through it.
  const subscriber = runtime.eventSubscriber({
    onError: (err, runId) => logger.warn({ err, runId }, 'event subscriber error'),
    ...(config.EVENT_METRICS
      ? {
          onMessage: (message: string, decode: () => RunEvent[]) =>
            observeMessage(metrics, message, Date.now(), decode),
        }
      : {}),
  });

  // Keys created at run time: every API hears changes on a channel (managed-keys.ts).
  const managedKeys = new ManagedKeyStore(runtime.redis, runtime.keys);
  managedKeys.listen(() =>
    duplicateClient(runtime.redis, {
      connectionName: 'baton-api-keys',
      maxRetriesPerRequest: null,
      enableOfflineQueue: true,
    }),
  );
  const tokens = new TokenService({
    redis: runtime.redis,
    subscriber: duplicateClient(runtime.redis, {
      connectionName: 'baton-api-tokens',
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
    }),
    names: runtime.keys.tokens,
    issuer: config.TOKEN_ISSUER ?? config.PUBLIC_URL ?? 'baton',
    audience: config.TOKEN_AUDIENCE,
    maxTtlSeconds: config.TOKEN_MAX_TTL_SECONDS,
    secret: config.TOKEN_SIGNING_SECRET,
    onError: (err) => logger.warn({ err }, 'token key set or revocations could not be read'),
  });
  if (config.TOKEN_SIGNING_SECRET === undefined)
    logger.warn(
      'TOKEN_SIGNING_SECRET is not set: token signing keys are kept unencrypted in Redis; set it (32+ random characters, the same on every API) in production',
    );
  await startTokens(tokens, redisReady, logger);

  const context: ApiContext = {
    config,
    service: runtime.service,
    waits: runtime.waits,
    schedules: new ScheduleService(runtime),
    health: runtimeHealth(runtime),
    logger,
    keys,
    managedKeys,
    tokens,
    metrics,
    sseLimiter: new SseConnectionLimiter(
      runtime.redis,
      runtime.keys,
      config.SSE_MAX_PER_TENANT,
      config.SSE_LEASE_MS,
      (connectionName) => duplicateClient(runtime.redis, { connectionName }),
    ),
    idempotency: new IdempotencyStore(runtime.redis, runtime.keys, config.IDEMPOTENCY_TTL_SECONDS),
    streams: new Set(),
  };

  const app = express();
  const gate = new ShutdownGate();
  app.use(gate.middleware);
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  if (config.TRUST_PROXY !== '') app.set('trust proxy', trustProxy(config.TRUST_PROXY));
  // Tracing (OTEL_*): a server span per request, active while it is handled; nothing when off.
  const tracing = httpTracing();
  if (tracing) app.use(tracing);
  // A configured key is a secret wherever a client put it in the URL (redactUrl).
  const isSecret = (value: string): boolean =>
    value.length >= 8 &&
    (keys.verify(value) !== null ||
      value.startsWith(MANAGED_KEY_PREFIX) ||
      value === config.METRICS_KEY);
  app.use(httpLogger(logger, isSecret));
  app.use(metrics.middleware());
  const corsHandler = corsMiddleware(parseCorsOrigins(config.CORS_ORIGINS), () =>
    appRouteMethods(app),
  );
  if (corsHandler) app.use(corsHandler);
  app.use(
    '/metrics',
    metricsAuth({ keys, metricsKey: config.METRICS_KEY, public: config.METRICS_PUBLIC }),
  );
  app.use(opsRouter(context));
  // Static and unauthenticated: the console sends the person's key with each /v1 call.
  if (opts.consoleDir !== false) app.use('/console', consoleRouter(opts.consoleDir));

  // Public: anyone may verify Baton's tokens with its public keys.
  app.use(jwksRouter(context));
  const auth = authenticate(
    keys,
    new AuthFailureLimiter(runtime.redis, runtime.keys, config.AUTH_FAILURES_PER_MINUTE),
    [managedKeys, tokens, idp],
  );
  const board = new BoardQueues(runtime.queues, () => runtime.service.catalog.names());
  app.use(
    BULL_BOARD_PATH,
    auth,
    requireAdmin,
    jsonBody(config.BODY_LIMIT_BYTES),
    bullBoardGuard(board),
    bullBoardRouter(board, BULL_BOARD_PATH),
  );

  const api: RequestHandler[] = [
    auth,
    rateLimit(runtime.redis, runtime.keys, config.RATE_LIMIT_PER_MINUTE),
    jsonBody(config.BODY_LIMIT_BYTES),
    authorizeRequest(context, {
      paths: () => buildOpenApiDocument()['paths'] as Record<string, unknown>,
      ...(authzHook ? { hook: authzHook } : {}),
      // A tenant without an identity provider bounds runs:start by nothing but the token's scopes.
      allowedAgents: (tenantId) => idp.tenantConfig(tenantId)?.allowedAgents ?? ['*'],
    }),
  ];
  // Plugins first: one under /v1 (e.g. /v1/ai-sdk) must not pass through /v1's auth and rate
  // limit a second time.
  for (const plugin of opts.plugins ?? protocolPlugins()) {
    if (plugin.public) app.use(plugin.path, plugin.router(context));
    else app.use(plugin.path, ...api, plugin.router(context));
  }
  // A waitpoint URL's token is its credential: no API key, its own small body limit.
  app.use(
    waitpointRouter(
      context.waits,
      waitpointRateLimit(runtime.redis, runtime.keys, config.WAITPOINT_RATE_LIMIT_PER_MINUTE),
    ),
  );
  app.use('/v1', ...api, v1Router(context));

  app.use(notFoundHandler);
  app.use(errorMiddleware(logger));

  let closed = false;
  return {
    app,
    context,
    runtime,
    close: async () => {
      if (closed) return;
      closed = true;
      gate.close();
      for (const finish of [...context.streams]) finish();
      // What is still being answered needs Redis until it is done.
      await gate.drain(2_000);
      context.sseLimiter.close();
      managedKeys.close();
      tokens.close();
      // The runtime's subscriber: an embedder's runtime keeps it until its own close().
      if (!ownsRuntime) return;
      await subscriber.close().catch(() => undefined);
      // A quit waits for Redis' reply: with Redis gone a stop would wait for ever, so past a
      // short wait the connections are dropped (issue 32).
      let timer: NodeJS.Timeout | undefined;
      const stuck = await Promise.race([
        runtime.close().then(
          () => false,
          () => false,
        ),
        new Promise<boolean>((resolve) => (timer = setTimeout(resolve, 2_000, true))),
      ]);
      clearTimeout(timer);
      if (stuck) {
        logger.warn('Redis connections did not close; disconnecting them');
        runtime.disconnect();
      }
    },
  };
}

/**
 * Loads the token key set (creating the first key) and the revocations; with Redis away at
 * start, keeps trying in the background (tokens are refused until then, with 503s).
 */
async function startTokens(
  tokens: TokenService,
  redisReady: boolean,
  logger: { warn(obj: object, msg: string): void },
): Promise<void> {
  const attempt = (): Promise<boolean> =>
    tokens.start().then(
      () => true,
      (err: unknown) => {
        logger.warn({ err }, 'token key set not loaded yet; retrying');
        return false;
      },
    );
  if (redisReady && (await attempt())) return;
  const retry = (): void => {
    setTimeout(() => {
      void attempt().then((ok) => {
        if (!ok) retry();
      });
    }, 1_000).unref();
  };
  retry();
}

/**
 * Opens the queues of the agents known now (every shard of their task queues), and reads their
 * task queues, so the first run or decision after a (re)start does not pay for a new BullMQ
 * connection inside its request (where the API's 2 s command
 * timeout could turn a slow connect into a 503). Bounded: an agent advertised later, or a slow
 * Redis, only means its queue connects on first use, as before.
 */
async function warmStepQueues(runtime: BatonRuntime, timeoutMs: number): Promise<void> {
  const names = await runtime.service.catalog.names();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
  });
  await Promise.race([
    runtime.queues
      .listQueues(names)
      .then((queues) => Promise.all(queues.map((q) => q.waitUntilReady())))
      .catch(() => undefined),
    deadline,
  ]);
  clearTimeout(timer);
}
