import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/**
 * A tenant's identity provider for tests (issue 35): a JWKS endpoint on 127.0.0.1 whose keys a
 * test rotates, counting its fetches, and a signer of its users' tokens.
 */

const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'baton-api';

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

export async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
  };
}

/** The identity provider: a JWKS endpoint whose keys the test swaps, and a token signer. */
export class LocalIdp {
  server!: Server;
  keys: SigningKey[] = [];
  signer!: SigningKey;
  fetches = 0;

  async start(): Promise<void> {
    this.signer = await signingKey('k1');
    this.keys = [this.signer];
    this.server = createServer((req, res) => {
      if (req.url !== '/jwks.json') {
        res.writeHead(404).end();
        return;
      }
      this.fetches += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: this.keys.map((k) => k.jwk) }));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  get jwksUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/jwks.json`;
  }

  /** A hard rotation: the old key is gone from the JWKS and the new one signs from now on. */
  async rotate(kid: string): Promise<void> {
    this.signer = await signingKey(kid);
    this.keys = [this.signer];
  }

  token(
    subject: string,
    claims: Record<string, unknown> = {},
    opts: { audience?: string; expiresIn?: string | number; key?: SigningKey } = {},
  ): Promise<string> {
    const key = opts.key ?? this.signer;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: key.kid })
      .setIssuer(ISSUER)
      .setAudience(opts.audience ?? AUDIENCE)
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime(opts.expiresIn ?? '2m')
      .sign(key.privateKey);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The API settings that make `idp` tenant-a's identity provider (assistant allowed, 1 s cooldown). */
export function idpEnv(idp: LocalIdp, extra: Record<string, string> = {}): Record<string, string> {
  return {
    IDP_TENANTS: JSON.stringify([
      {
        tenant: 'tenant-a',
        issuer: ISSUER,
        jwksUrl: idp.jwksUrl,
        audience: AUDIENCE,
        algorithms: ['ES256'],
        allowedAgents: ['assistant'],
        jwksCooldownSeconds: 1,
      },
    ]),
    ...extra,
  };
}
