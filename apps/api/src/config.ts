import { readFileSync } from 'node:fs';
import { MAX_DECISIONS_PER_REQUEST, MAX_INPUT_MESSAGES } from '@baton/protocol';
import { z } from 'zod';
import { ConfigError, type SdkOptions } from '@baton/runtime';
import { compileSdkOptions, parseEnv, runtimeConfigShape, type Env } from '@baton/runtime/internal';

export { ConfigError };

const bool = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/**
 * API configuration: environment variables (config/env-keys.ts in @baton/runtime lists them all),
 * parsed by the one parser (config/parse-env.ts), which fails at startup naming the variable.
 * Key entries (API_KEYS, API_KEYS_FILE, ADMIN_KEYS) are parsed by auth.ts.
 */
export const ApiConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  /** URL printed in links and logs when the API sits behind a proxy (default: http://localhost:PORT). */
  PUBLIC_URL: z.url().optional(),
  /** REDIS_URL, BATON_PREFIX, retention and durability: shared with the workers. */
  ...runtimeConfigShape,
  /** Comma- or newline-separated `tenant:key` or `tenant:sha256:<hex>` entries. */
  API_KEYS: z.string().default(''),
  /** File with one `tenant:key` / `tenant:sha256:<hex>` entry per line (# comments allowed). */
  API_KEYS_FILE: z.string().optional(),
  /**
   * Tenants' own identity providers: a JSON array of {tenant, issuer, jwksUrl, audience, …}
   * (idp/idp-config.ts); their users' JWTs are accepted as end users of that tenant.
   */
  IDP_TENANTS: z.string().default(''),
  /** A file holding such a JSON array. */
  IDP_TENANTS_FILE: z.string().optional(),
  /**
   * Authorization hook: a module (path relative to the working directory, `./authz.ts` or
   * `./authz.ts:exportName`) whose function allows, denies or narrows each end user's request.
   */
  BATON_AUTHZ: z.string().optional(),
  /** Admin keys: `name:key` or `name:sha256:<hex>`; `name` is also the admin's own tenant. */
  ADMIN_KEYS: z.string().default(''),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
  MAX_INPUT_MESSAGES: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_INPUT_MESSAGES)
    .default(MAX_INPUT_MESSAGES),
  MAX_DECISIONS: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_DECISIONS_PER_REQUEST)
    .default(MAX_DECISIONS_PER_REQUEST),
  /** Concurrent SSE streams per tenant, across all API instances. */
  SSE_MAX_PER_TENANT: z.coerce.number().int().min(1).default(100),
  /** How long a stream's lease outlives its API instance (refreshed every third of it). */
  SSE_LEASE_MS: z.coerce.number().int().min(300).default(30_000),
  SSE_HEARTBEAT_MS: z.coerce.number().int().min(50).default(15_000),
  /** A stop (SIGTERM) ends the process within this plus a fixed 5 s, whatever Redis does. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** Requests per client IP per minute to waitpoint URLs (POST /w/:token; 0 = unlimited). */
  WAITPOINT_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(120),
  /** Failed authentications per client IP per minute before it gets 429 (0 = unlimited). */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).default(30),
  /** express 'trust proxy': '' (client IP = socket), 'true', a hop count or a list of subnets. */
  TRUST_PROXY: z.string().default(''),
  /** Bearer key for /metrics (admin keys work too); unset: admin keys only. */
  METRICS_KEY: z.string().min(16, 'use at least 16 random characters').optional(),
  /** Serve /metrics without any key (a scraper on a private network). */
  METRICS_PUBLIC: bool.default(false),
  /** Browser origins allowed to call the API: '' (none), '*' or a comma-separated list. */
  CORS_ORIGINS: z.string().default(''),
  /** Time to receive a whole request (headers and body); slower clients get 408 and are cut. */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** Time to receive the request headers (at most REQUEST_TIMEOUT_MS). */
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** How long an idle keep-alive connection stays open; above typical proxy idle timeouts. */
  KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).default(65_000),
  IDEMPOTENCY_TTL_SECONDS: z.coerce.number().int().min(1).default(86_400),
  /**
   * Report step/tool durations and finished runs of every run (read from the counts committing
   * processes add to Redis) and the pub/sub lag of the streamed runs.
   */
  EVENT_METRICS: bool.default(true),
  /**
   * Agent a front-end protocol request runs when it names none (AI SDK body `agent`, AG-UI
   * `forwardedProps.agent`); see apps/api/src/adapters.
   */
  PROTOCOL_DEFAULT_AGENT: z.string().min(1).max(128).default('assistant'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Tenant webhooks: `tenant:whsec_<base64>:https://…` entries (webhooks/tenant-webhooks.ts). */
  TENANT_WEBHOOKS: z.string().default(''),
  TENANT_WEBHOOKS_FILE: z.string().optional(),
  /**
   * Encrypts the token signing keys' private parts in Redis (docs/tokens.md); every API of a
   * deployment needs the same. Unset: they are stored unencrypted (a warning at start).
   */
  TOKEN_SIGNING_SECRET: z.string().min(32, 'use at least 32 random characters').optional(),
  /** The longest lifetime a minted token may ask for; also how long revocations are kept. */
  TOKEN_MAX_TTL_SECONDS: z.coerce.number().int().min(60).max(2_592_000).default(86_400),
  /** `iss` of Baton's tokens (default: PUBLIC_URL, else "baton"). */
  TOKEN_ISSUER: z.string().min(1).max(512).optional(),
  /** `aud` of Baton's tokens. */
  TOKEN_AUDIENCE: z.string().min(1).max(512).default('baton'),
});
export type ApiConfig = z.infer<typeof ApiConfigSchema>;

/**
 * The API's configuration from `env` (main.ts passes the process's; nothing below it reads the
 * environment). A bad value throws ConfigError naming the variable and what it accepts.
 */
export function loadApiConfig(env: Env): ApiConfig {
  return parseEnv(ApiConfigSchema, env);
}

/**
 * The API's settings as camelCase options: the variable's name without `BATON_` (`port`,
 * `apiKeys`, `redisUrl`, `prefix`, `sseMaxPerTenant` …).
 */
export type ApiOptions = SdkOptions<ApiConfig>;

/**
 * The configuration startApi / createApp take, built in code from camelCase options (the
 * environment is not read): the schema the environment goes through gives the defaults, and a bad
 * value throws ConfigError naming the option.
 */
export function apiConfig(options: ApiOptions = {}): ApiConfig {
  return compileSdkOptions(ApiConfigSchema, options, { caller: 'apiConfig' });
}

/** Every tenant key entry from API_KEYS and API_KEYS_FILE. */
export function tenantKeyEntries(config: Pick<ApiConfig, 'API_KEYS' | 'API_KEYS_FILE'>): string[] {
  let fromFile = '';
  if (config.API_KEYS_FILE) {
    try {
      fromFile = readFileSync(config.API_KEYS_FILE, 'utf8');
    } catch (error) {
      throw new ConfigError(
        `API_KEYS_FILE: cannot read ${config.API_KEYS_FILE} (${(error as NodeJS.ErrnoException).code ?? 'error'}); point it at a readable file or unset it`,
      );
    }
  }
  return [...splitEntries(config.API_KEYS), ...splitEntries(fromFile)];
}

export function splitEntries(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}
