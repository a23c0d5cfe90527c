import { createHash } from 'node:crypto';
import { BatonError } from '@baton/core';
import {
  createRemoteJWKSet,
  decodeJwt,
  errors as joseErrors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { CredentialVerifier, Principal } from '../auth.ts';
import type { IdpTenant } from './idp-config.ts';

/**
 * Verifies the JWTs of tenants' own identity providers (idp-config.ts) with `jose`: a token is
 * this verifier's when its (unverified) `iss` is a configured issuer; its signature is then
 * checked against that provider's JWKS, fetched and cached by createRemoteJWKSet, with the
 * issuer, the audience, the allowed algorithms and the expiry. A token signed with a key the
 * cache does not hold makes one refetch per cooldown: a provider that rotates its key is
 * followed without a restart, and a flood of made-up `kid`s costs at most that one fetch.
 */

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Baton's scope vocabulary (packages/protocol scopes): anything else in the claim is ignored. */
const BATON_SCOPE =
  /^(runs:own|runs:start|(run:read|run:decide|thread:read|thread:run|agent:start):[^\s]{1,256})$/;
const POLL_MS = 25;
/**
 * A verified token is remembered this long at most (and never past its exp): a page sends the
 * same token with every request, and a hit costs one SHA-256 instead of a signature check. A
 * key the provider withdraws stops verifying new tokens at once, cached ones within this.
 */
const VERIFIED_TTL_MS = 30_000;
const VERIFIED_MAX = 10_000;

interface Provider {
  readonly tenant: IdpTenant;
  readonly jwks: ReturnType<typeof createRemoteJWKSet>;
}

function unauthorized(message: string): BatonError {
  return new BatonError('unauthorized', message);
}

/** What a failed verification tells the caller: the reason, never the token or its claims. */
function reasonOf(error: unknown, tenant: IdpTenant): BatonError {
  if (error instanceof joseErrors.JWTExpired) return unauthorized('token expired');
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'aud')
      return unauthorized(`token audience is not this API's (${JSON.stringify(tenant.audience)})`);
    if (error.claim === 'nbf') return unauthorized('token not valid yet (nbf)');
    return unauthorized(`token claim "${error.claim}" is invalid: ${error.reason}`);
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return unauthorized(`token algorithm not allowed (allowed: ${tenant.algorithms.join(', ')})`);
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return unauthorized("token signed with a key the identity provider's JWKS does not hold");
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return unauthorized('token signature is invalid');
  if (error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JOSEError) {
    if (error.code === 'ERR_JWKS_TIMEOUT' || error.code === 'ERR_JOSE_GENERIC')
      return new BatonError(
        'unavailable',
        "the identity provider's keys cannot be fetched right now; retry shortly",
      );
    return unauthorized(`token is invalid (${error.code})`);
  }
  return new BatonError(
    'unavailable',
    "the identity provider's keys cannot be fetched right now; retry shortly",
  );
}

function scopesOf(claims: JWTPayload, tenant: IdpTenant): string[] {
  const raw = claims[tenant.scopesClaim];
  const list =
    typeof raw === 'string'
      ? raw.split(/\s+/)
      : Array.isArray(raw)
        ? raw.filter((v): v is string => typeof v === 'string')
        : [];
  const prefix = tenant.scopePrefix;
  const scopes = list
    .filter((s) => prefix === '' || s.startsWith(prefix))
    .map((s) => s.slice(prefix.length))
    .filter((s) => BATON_SCOPE.test(s));
  return scopes.length > 0 ? [...new Set(scopes)] : [...tenant.defaultScopes];
}

export class IdpVerifier implements CredentialVerifier {
  private readonly byIssuer = new Map<string, Provider>();
  private readonly byTenant = new Map<string, IdpTenant>();
  private readonly verified = new Map<string, { principal: Principal; until: number }>();

  constructor(tenants: readonly IdpTenant[], fetchTimeoutMs = 5_000) {
    for (const tenant of tenants) {
      this.byTenant.set(tenant.tenant, tenant);
      this.byIssuer.set(tenant.issuer, {
        tenant,
        jwks: createRemoteJWKSet(new URL(tenant.jwksUrl), {
          cooldownDuration: tenant.jwksCooldownSeconds * 1000,
          cacheMaxAge: tenant.jwksMaxAgeSeconds * 1000,
          timeoutDuration: fetchTimeoutMs,
        }),
      });
    }
  }

  get size(): number {
    return this.byIssuer.size;
  }

  /** The tenant's identity-provider settings (allowed agents, …), if it has one. */
  tenantConfig(tenantId: string): IdpTenant | undefined {
    return this.byTenant.get(tenantId);
  }

  async verify(presented: string): Promise<Principal | null> {
    if (!JWT_SHAPE.test(presented)) return null;
    let iss: string | undefined;
    try {
      iss = decodeJwt(presented).iss;
    } catch {
      return null;
    }
    const provider = iss === undefined ? undefined : this.byIssuer.get(iss);
    if (provider === undefined) return null;
    const { tenant } = provider;
    const digest = createHash('sha256').update(presented).digest('base64url');
    const now = Date.now();
    const hit = this.verified.get(digest);
    if (hit !== undefined && hit.until > now) return hit.principal;
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(presented, this.keyOf(provider), {
        issuer: tenant.issuer,
        audience: tenant.audience,
        algorithms: tenant.algorithms,
        clockTolerance: tenant.clockToleranceSeconds,
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw reasonOf(error, tenant);
    }
    const subject = claims[tenant.subjectClaim];
    if (typeof subject !== 'string' || subject === '' || subject.length > 256)
      throw unauthorized(`token has no "${tenant.subjectClaim}" claim naming the user`);
    const principal: Principal = {
      tenantId: tenant.tenant,
      admin: false,
      subject,
      scopes: scopesOf(claims, tenant),
      credential: {
        kind: 'idp-token',
        ...(typeof claims.jti === 'string' ? { id: claims.jti } : {}),
        ...(claims.exp !== undefined ? { expiresAt: claims.exp * 1000 } : {}),
      },
      claims,
    };
    if (this.verified.size >= VERIFIED_MAX) this.verified.clear();
    const exp = (claims.exp ?? 0) * 1000;
    this.verified.set(digest, { principal, until: Math.min(exp, now + VERIFIED_TTL_MS) });
    return principal;
  }

  /**
   * The JWKS lookup, patient with a key the provider has just started signing with: when the
   * kid is unknown and a fetch happened within the cooldown, jose refuses at once; here the
   * request waits for the cooldown to end and asks again (the refetch is shared by every
   * waiting request), so a fresh token is never refused because of when the last fetch was.
   */
  private keyOf(provider: Provider): JWTVerifyGetKey {
    const { jwks } = provider;
    return async (header, token) => {
      try {
        return await jwks(header, token);
      } catch (error) {
        if (!(error instanceof joseErrors.JWKSNoMatchingKey) || !jwks.coolingDown) throw error;
        const deadline = Date.now() + provider.tenant.jwksCooldownSeconds * 1000 + POLL_MS;
        while (jwks.coolingDown && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        return jwks(header, token);
      }
    };
  }
}
