import { randomUUID } from 'node:crypto';
import { BatonError } from '@baton/core';
import {
  ScopeSchema,
  oneUseByDefault,
  type MintTokenRequest,
  type MintTokenResponse,
} from '@baton/protocol';
import type { RedisClient } from '@baton/runtime';
import type { TokenKeys } from '@baton/runtime/internal';
import { SignJWT, decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Principal } from '../auth.ts';
import { Revocations, TokenStreams } from './revocations.ts';
import { SigningKeys, TOKEN_ALG } from './signing-keys.ts';

/** Default lifetime of a minted token. */
const DEFAULT_TOKEN_TTL_SECONDS = 900;

export interface TokenServiceOptions {
  readonly redis: RedisClient;
  /** Subscriptions (pub/sub) need a connection of their own. */
  readonly subscriber: RedisClient;
  /** BatonKeys.tokens of the deployment's prefix. */
  readonly names: TokenKeys;
  /** `iss` of minted tokens and what verification requires. */
  readonly issuer: string;
  readonly audience: string;
  readonly maxTtlSeconds: number;
  /** TOKEN_SIGNING_SECRET: encrypts the private keys at rest. */
  readonly secret: string | undefined;
  readonly onError?: (err: unknown) => void;
}

/** Claims Baton adds to the registered ones (iss, aud, sub, exp, iat, jti). */
interface BatonClaims extends JWTPayload {
  tenant?: unknown;
  scopes?: unknown;
  once?: unknown;
}

const RELOAD_EVERY_MS = 5_000;

/**
 * Tokens verified recently, by their text: a browser sends the same token with each request, and
 * the signature check (ES256) is most of what a token costs. Revocation and expiry are checked
 * on every hit; one-use tokens are never cached.
 */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Baton's own tokens: minted for a tenant (POST /v1/tokens, and with every run a tenant key
 * creates), verified on every API with the shared key set, refused once revoked or (one-use) used.
 */
export class TokenService {
  readonly keys: SigningKeys;
  readonly revocations: Revocations;
  readonly streams = new TokenStreams();
  private readonly opts: TokenServiceOptions;
  private readonly names: TokenKeys;
  private timer: NodeJS.Timeout | undefined;
  private listening = false;
  /** A failed background reload (the periodic one, after a message, after a reconnect). */
  private readonly onError: (err: unknown) => void;
  private readonly verified = new Map<string, Principal>();

  constructor(opts: TokenServiceOptions) {
    this.opts = opts;
    this.names = opts.names;
    this.onError = opts.onError ?? (() => undefined);
    const maxTtlMs = opts.maxTtlSeconds * 1000;
    this.keys = new SigningKeys(opts.redis, opts.names, opts.secret, maxTtlMs);
    this.revocations = new Revocations(opts.redis, opts.names, maxTtlMs);
    this.revocations.onRevoked = (r) => this.streams.close(r);
    // Its own connection, made before start() (which may wait for Redis): without a listener an
    // unreachable Redis is an unhandled 'error' event on every retry. ioredis reconnects by
    // itself, and 'ready' reloads what was missed; /readyz reports Redis.
    opts.subscriber.on('error', () => undefined);
  }

  /** Loads (or creates) the key set and the revocations, and listens for changes of either. */
  async start(): Promise<void> {
    const sub = this.opts.subscriber;
    if (!this.listening) this.listen(sub);
    await sub.subscribe(this.names.channel);
    await Promise.all([this.keys.start(), this.revocations.reload()]);
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      void Promise.all([this.keys.reload(), this.revocations.reload()]).catch(this.onError);
    }, RELOAD_EVERY_MS);
    this.timer.unref();
  }

  private listen(sub: RedisClient): void {
    this.listening = true;
    sub.on('message', (channel: string, message: string) => {
      if (channel !== this.names.channel) return;
      if (message === 'keys') void this.keys.reload().catch(this.onError);
      else this.revocations.applyMessage(message);
    });
    // After a reconnect the messages sent meanwhile are lost: read both sets again.
    sub.on('ready', () => {
      void Promise.all([this.keys.reload(), this.revocations.reload()]).catch(this.onError);
    });
  }

  close(): void {
    clearInterval(this.timer);
    this.opts.subscriber.disconnect();
  }

  /** A token for `principal`'s tenant. Only a tenant key (no scopes of its own) may mint. */
  mint(principal: Principal, request: MintTokenRequest): Promise<MintTokenResponse> {
    if (principal.scopes !== null)
      throw new BatonError('forbidden', 'tokens are minted with a tenant API key, not a token');
    return this.issue(principal.tenantId, request);
  }

  /**
   * A token of `tenantId`, whoever asks: Baton's own (a created run's publicAccessToken, which a
   * token that started the run gets too).
   */
  async issue(tenantId: string, request: MintTokenRequest): Promise<MintTokenResponse> {
    const ttl = request.expiresIn ?? DEFAULT_TOKEN_TTL_SECONDS;
    if (ttl > this.opts.maxTtlSeconds)
      throw new BatonError(
        'validation_failed',
        `expiresIn ${ttl} is over the maximum of ${this.opts.maxTtlSeconds} s (TOKEN_MAX_TTL_SECONDS); ask for less`,
      );
    const oneUse = request.oneUse ?? oneUseByDefault(request.scopes);
    const jti = randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const { kid, key } = this.keys.current();
    const jwt = new SignJWT({
      tenant: tenantId,
      scopes: request.scopes,
      ...(oneUse ? { once: true } : {}),
    })
      .setProtectedHeader({ alg: TOKEN_ALG, kid, typ: 'JWT' })
      .setIssuer(this.opts.issuer)
      .setAudience(this.opts.audience)
      .setJti(jti)
      .setIssuedAt(now)
      .setExpirationTime(now + ttl);
    if (request.subject !== undefined) jwt.setSubject(request.subject);
    const token = await jwt.sign(key);
    return {
      token,
      tokenId: jti,
      expiresAt: (now + ttl) * 1000,
      scopes: request.scopes,
      ...(request.subject !== undefined ? { subject: request.subject } : {}),
      oneUse,
    };
  }

  /**
   * The principal of a Baton token, null when the token is not Baton's (another issuer: the next
   * verifier's), 401 when it is Baton's but not valid now.
   */
  async verify(token: string): Promise<Principal | null> {
    const cached = this.verified.get(token);
    if (cached !== undefined) {
      if (cached.credential.expiresAt! > Date.now()) {
        this.refuseRevoked(cached);
        return cached;
      }
      this.verified.delete(token);
    }
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      return null;
    }
    if (unverified.iss !== this.opts.issuer) return null;
    let payload: BatonClaims;
    try {
      ({ payload } = await jwtVerify<BatonClaims>(
        token,
        async (header) => {
          const key = await this.keys.verifyKey(header.kid);
          if (key === null) throw new joseErrors.JWKSNoMatchingKey();
          return key;
        },
        {
          issuer: this.opts.issuer,
          audience: this.opts.audience,
          algorithms: [TOKEN_ALG],
          requiredClaims: ['jti', 'exp', 'iat'],
        },
      ));
    } catch (error) {
      throw new BatonError('unauthorized', refusal(error));
    }
    const tenantId = payload.tenant;
    const scopes = payload.scopes;
    if (
      typeof tenantId !== 'string' ||
      !Array.isArray(scopes) ||
      !scopes.every((s) => ScopeSchema.safeParse(s).success)
    )
      throw new BatonError('unauthorized', 'invalid token: its tenant or scopes are malformed');
    const jti = payload.jti!;
    const issuedAt = payload.iat!;
    const subject = payload.sub;
    const expiresAt = payload.exp! * 1000;
    const principal: Principal = {
      tenantId,
      admin: false,
      ...(subject !== undefined ? { subject } : {}),
      scopes: scopes as string[],
      credential: { kind: 'baton-token', id: jti, expiresAt, issuedAt },
    };
    this.refuseRevoked(principal);
    if (payload.once === true) {
      // One use, on whichever API sees it first: the mark lives as long as the token.
      const first = await this.opts.redis.set(
        this.names.used(jti),
        '1',
        'PX',
        Math.max(1, expiresAt - Date.now()),
        'NX',
      );
      if (first !== 'OK')
        throw new BatonError('unauthorized', 'this one-use token was used already: get a new one');
      return principal;
    }
    if (this.verified.size >= VERIFIED_CACHE_SIZE) {
      const oldest = this.verified.keys().next();
      if (!oldest.done) this.verified.delete(oldest.value);
    }
    this.verified.set(token, principal);
    return principal;
  }

  private refuseRevoked(principal: Principal): void {
    if (
      this.revocations.isRevoked({
        tenantId: principal.tenantId,
        jti: principal.credential.id!,
        issuedAt: principal.credential.issuedAt!,
        ...(principal.subject !== undefined ? { subject: principal.subject } : {}),
      })
    )
      throw new BatonError('unauthorized', 'token revoked: get a new one');
  }
}

function refusal(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'token expired: get a new one';
  if (error instanceof joseErrors.JWTClaimValidationFailed)
    return `invalid token: claim ${error.claim} is not what this API accepts`;
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return 'invalid token: signed by a key this API does not know (or no longer accepts)';
  return 'invalid token: its signature or format is not valid';
}
