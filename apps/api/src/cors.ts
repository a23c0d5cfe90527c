import cors, { type CorsOptions } from 'cors';
import type { RequestHandler } from 'express';
import { ConfigError } from './config.ts';

/** Response headers a browser app may read (rate limits, request ids, created resources). */
const EXPOSED_HEADERS = [
  'Retry-After',
  'X-Request-Id',
  'Location',
  'Idempotent-Replayed',
  'x-vercel-ai-ui-message-stream',
  'X-Baton-Public-Access-Token',
];

/** `CORS_ORIGINS`: '' (off), '*' (any origin) or a comma-separated list of exact origins. */
export function parseCorsOrigins(value: string): '*' | string[] {
  const trimmed = value.trim();
  if (trimmed === '*') return '*';
  const origins = trimmed
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || parsed.origin !== origin)
      throw new ConfigError(
        `CORS_ORIGINS: "${origin}" is not an origin; use scheme://host[:port] without a path or trailing slash, or *`,
      );
  }
  return origins;
}

/**
 * CORS for browser apps on other origins (the AI SDK and AG-UI clients above all). Mounted
 * before authentication: a preflight carries no API key and must be answered anyway. Keys travel
 * in headers, never cookies, so credentials stay off. `methods` gives the methods the API's
 * routes answer; it is read at the first request, once every route is mounted.
 */
export function corsMiddleware(
  origins: '*' | readonly string[],
  methods: () => readonly string[],
): RequestHandler | null {
  if (origins !== '*' && origins.length === 0) return null;
  const allowed = origins === '*' ? null : new Set(origins);
  let options: CorsOptions | undefined;
  const optionsOf = (): CorsOptions =>
    (options ??= {
      origin:
        allowed === null
          ? '*'
          : (origin, done) => done(null, origin !== undefined && allowed.has(origin)),
      methods: [...methods()],
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: 600,
      optionsSuccessStatus: 204,
    });
  return cors((_req, done) => done(null, optionsOf()));
}
