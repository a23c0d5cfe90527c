import { createHash, timingSafeEqual } from 'node:crypto';
import { BatonError } from '@baton/core';
import type { Request, RequestHandler } from 'express';
import { ConfigError } from './config.ts';
import { credentialParams } from './logger.ts';

/** Who is calling: every request is made on behalf of exactly one tenant. */
export interface Principal {
  readonly tenantId: string;
  readonly admin: boolean;
  /** The end user a token speaks for (absent for tenant keys). */
  readonly subject?: string;
  /** What a token may do (packages/protocol scopes); null: everything the tenant may (a key). */
  readonly scopes: readonly string[] | null;
  readonly credential: {
    readonly kind: 'api-key' | 'baton-token' | 'idp-token';
    readonly id?: string;
    /** ms since epoch */
    readonly expiresAt?: number;
  };
  /** A verified token's claims, for the authorization hook (BATON_AUTHZ); never logged. */
  readonly claims?: Readonly<Record<string, unknown>>;
}

/**
 * A second kind of credential after the API keys of the environment (KeyStore): managed keys in
 * Redis, Baton-minted and identity-provider tokens. null: not its credential, or not a valid one;
 * a BatonError 'unauthorized' says why it is invalid (e.g. an expired token).
 */
export interface CredentialVerifier {
  verify(presented: string): Promise<Principal | null>;
}

interface KeyEntry {
  readonly hash: Buffer;
  readonly principal: Principal;
}

const TENANT_RE = /^[A-Za-z0-9._-]{1,128}$/;
const HASHED_RE = /^sha256:([0-9a-f]{64})$/i;

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * API keys, kept only as SHA-256 hashes. An entry is `tenant:key` (hashed on load) or
 * `tenant:sha256:<64 hex>` (already hashed, e.g. from `node -e` or a secrets manager).
 */
export class KeyStore {
  private readonly entries: KeyEntry[] = [];

  constructor(tenantEntries: readonly string[], adminEntries: readonly string[] = []) {
    for (const e of tenantEntries) this.add(e, false);
    for (const e of adminEntries) this.add(e, true);
  }

  get size(): number {
    return this.entries.length;
  }

  private add(entry: string, admin: boolean): void {
    const i = entry.indexOf(':');
    const what = admin ? 'ADMIN_KEYS' : 'API_KEYS';
    if (i <= 0 || i === entry.length - 1)
      throw new ConfigError(
        `${what}: an entry must look like name:key or name:sha256:<hex> (got one without a name or key)`,
      );
    const tenantId = entry.slice(0, i);
    const secret = entry.slice(i + 1);
    if (!TENANT_RE.test(tenantId))
      throw new ConfigError(
        `${what}: tenant "${tenantId}" may only contain letters, digits, ".", "_" and "-"`,
      );
    const hashed = HASHED_RE.exec(secret);
    if (!hashed && secret.length < 8)
      throw new ConfigError(
        `${what}: the key of tenant "${tenantId}" is shorter than 8 characters; use a longer random key`,
      );
    const hex = hashed ? hashed[1]!.toLowerCase() : hashKey(secret);
    this.entries.push({
      hash: Buffer.from(hex, 'hex'),
      principal: { tenantId, admin, scopes: null, credential: { kind: 'api-key' } },
    });
  }

  /** Constant-time in the number of keys: every entry is compared, none short-circuits. */
  verify(key: string): Principal | null {
    const presented = Buffer.from(hashKey(key), 'hex');
    let found: Principal | null = null;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.hash, presented) && found === null) found = entry.principal;
    }
    return found;
  }
}

/** The key a request presents: Authorization: Bearer, X-API-Key, or Basic (password; for Bull Board in a browser). */
export function presentedKey(req: Request): string | null {
  const header = req.headers.authorization;
  if (header) {
    const [scheme, ...rest] = header.trim().split(/\s+/);
    const value = rest.join(' ');
    if (scheme?.toLowerCase() === 'bearer' && value) return value;
    if (scheme?.toLowerCase() === 'basic' && value) {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const password = colon >= 0 ? decoded.slice(colon + 1) : decoded;
      return password || null;
    }
  }
  const x = req.headers['x-api-key'];
  if (typeof x === 'string' && x) return x;
  return null;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

/** What authenticate needs of a failed-authentication limit (limits.ts: AuthFailureLimiter). */
export interface AuthFailureLimit {
  check(ip: string): Promise<void>;
  failed(ip: string): Promise<Error | null>;
}

/**
 * 401 without a valid key; sets req.principal. With a limit, an address that failed too often
 * gets 429 before its key is checked.
 */
export function authenticate(
  keys: KeyStore,
  limit?: AuthFailureLimit,
  verifiers: readonly CredentialVerifier[] = [],
): RequestHandler {
  return async (req, _res, next) => {
    const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    await limit?.check(ip);
    const key = presentedKey(req);
    if (key === null) {
      // A key in the URL ends up in proxies' and browsers' logs: it is never read from there.
      const inQuery = credentialParams(req.originalUrl)
        .slice(0, 3)
        .map((name) => name.slice(0, 40));
      next(
        new BatonError(
          'unauthorized',
          inQuery.length > 0
            ? `missing API key: the query string (${inQuery.join(', ')}) is not read for keys; send Authorization: Bearer <key> or X-API-Key: <key>`
            : 'missing API key: send Authorization: Bearer <key> or X-API-Key: <key>',
        ),
      );
      return;
    }
    let principal = keys.verify(key);
    let refused: BatonError | null = null;
    for (const verifier of verifiers) {
      if (principal) break;
      try {
        principal = await verifier.verify(key);
      } catch (error) {
        if (!(error instanceof BatonError) || error.code !== 'unauthorized') throw error;
        refused = error;
      }
    }
    if (!principal) {
      const limited = await limit?.failed(ip);
      next(limited ?? refused ?? new BatonError('unauthorized', 'invalid API key'));
      return;
    }
    req.principal = principal;
    next();
  };
}

/** 403 for tenant keys (use after authenticate). */
export const requireAdmin: RequestHandler = (req, _res, next) => {
  if (!req.principal?.admin) {
    next(new BatonError('forbidden', 'this route needs an admin key (ADMIN_KEYS)'));
    return;
  }
  next();
};

export function principalOf(req: Request): Principal {
  if (!req.principal) throw new BatonError('unauthorized', 'missing API key');
  return req.principal;
}
