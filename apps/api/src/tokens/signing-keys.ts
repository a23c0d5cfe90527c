import { hkdfSync, randomUUID } from 'node:crypto';
import type { RedisClient } from '@baton/runtime';
import { defineScript, type LuaScript, type TokenKeys } from '@baton/runtime/internal';
import {
  CompactEncrypt,
  compactDecrypt,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
  type KeyObject,
} from 'jose';

/** The one signing algorithm: ECDSA P-256 (small keys and signatures, fast to verify). */
export const TOKEN_ALG = 'ES256';

type Key = CryptoKey | KeyObject;

/** What Redis holds per key: the public JWK, and the private one encrypted (or, without a secret, plain). */
interface StoredKey {
  readonly kid: string;
  readonly alg: typeof TOKEN_ALG;
  readonly createdAt: number;
  readonly publicJwk: JWK;
  /** JWE (dir, A256GCM) of the private JWK, under a key derived from TOKEN_SIGNING_SECRET. */
  readonly privateJwe?: string;
  /** Only when no TOKEN_SIGNING_SECRET is set (development): the private JWK as is. */
  readonly privateJwk?: JWK;
}

interface LoadedKey {
  readonly kid: string;
  readonly publicJwk: JWK;
  readonly verifyKey: Key;
  readonly createdAt: number;
  /** When another key took over signing (absent for the current key). */
  readonly retiredAt?: number;
}

// Installs a key as the signing key unless (ARGV[4] = '1') one exists already; the key it
// replaces is marked retired at ARGV[3] (it keeps verifying until its tokens expire).
const INSTALL_SCRIPT = `
local old = redis.call('GET', KEYS[2])
if ARGV[4] == '1' and old then return old end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
if old and old ~= ARGV[1] then redis.call('HSET', KEYS[3], old, ARGV[3]) end
return ARGV[1]
`;

/** An EC JWK as a key (importJWK answers bytes only for symmetric JWKs, never for these). */
async function importKey(jwk: JWK): Promise<Key> {
  return (await importJWK(jwk, TOKEN_ALG)) as Key;
}

/** The 32-byte key that encrypts private keys at rest, from the deployment's secret. */
function wrappingKey(secret: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secret, 'baton-token-keys', 'signing-key-wrap', 32));
}

/**
 * The token signing keys, shared by every API through Redis: one signs (the newest), the others
 * keep verifying until the tokens they signed have expired (TOKEN_MAX_TTL_SECONDS after they
 * were replaced). Each process holds the set in memory and reloads it when told (pub/sub) or
 * when a token names a key it does not know. Private keys leave this object only as a signing
 * key; the JWKS carries public members only.
 */
export class SigningKeys {
  private readonly redis: RedisClient;
  private readonly names: TokenKeys;
  private readonly installScript: LuaScript<
    [keys: string, current: string, retired: string],
    [kid: string, record: string, now: number, onlyIfNone: '1' | '0'],
    string
  >;
  private readonly wrap: Uint8Array | null;
  private readonly maxTtlMs: number;
  private loaded = new Map<string, LoadedKey>();
  private signing: { kid: string; key: Key } | null = null;
  private reloading: Promise<void> | null = null;
  private lastUnknownReload = 0;
  private privateCache = new Map<string, Key>();

  constructor(redis: RedisClient, names: TokenKeys, secret: string | undefined, maxTtlMs: number) {
    this.redis = redis;
    this.names = names;
    this.installScript = defineScript(redis, 'batonTokenKeyInstall', 3, INSTALL_SCRIPT);
    this.wrap = secret ? wrappingKey(secret) : null;
    this.maxTtlMs = maxTtlMs;
  }

  /** Whether private keys are encrypted at rest (TOKEN_SIGNING_SECRET is set). */
  get encrypted(): boolean {
    return this.wrap !== null;
  }

  /** Loads the set, creating the first key when the deployment has none. */
  async start(): Promise<void> {
    await this.reload();
    if (this.signing === null) {
      await this.install(true);
      await this.reload();
    }
  }

  /** A new signing key for every API (the old ones keep verifying); returns its kid. */
  async rotate(): Promise<string> {
    const kid = await this.install(false);
    await this.prune();
    await this.reload();
    await this.redis.publish(this.names.channel, 'keys');
    return kid;
  }

  private async install(onlyIfNone: boolean): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(TOKEN_ALG, { extractable: true });
    const kid = `${new Date().toISOString().slice(0, 10)}-${randomUUID().slice(0, 8)}`;
    const publicJwk = await exportJWK(publicKey);
    const privateJwk = await exportJWK(privateKey);
    const stored: StoredKey = {
      kid,
      alg: TOKEN_ALG,
      createdAt: Date.now(),
      publicJwk: { ...publicJwk, kid, alg: TOKEN_ALG, use: 'sig' },
      ...(this.wrap
        ? {
            privateJwe: await new CompactEncrypt(
              new TextEncoder().encode(JSON.stringify(privateJwk)),
            )
              .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid })
              .encrypt(this.wrap),
          }
        : { privateJwk }),
    };
    return this.installScript(
      [this.names.keys, this.names.current, this.names.retired],
      [kid, JSON.stringify(stored), Date.now(), onlyIfNone ? '1' : '0'],
    );
  }

  /** Drops keys retired longer ago than the longest token lifetime: nothing they signed is valid. */
  private async prune(): Promise<void> {
    const retired = await this.redis.hgetall(this.names.retired);
    const cutoff = Date.now() - this.maxTtlMs;
    for (const [kid, at] of Object.entries(retired)) {
      if (Number(at) < cutoff) {
        await this.redis.hdel(this.names.keys, kid);
        await this.redis.hdel(this.names.retired, kid);
      }
    }
  }

  /** Reads the set again (pub/sub said it changed); concurrent calls share one read. */
  reload(): Promise<void> {
    this.reloading ??= this.read().finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  private async read(): Promise<void> {
    const [all, current, retired] = await Promise.all([
      this.redis.hgetall(this.names.keys),
      this.redis.get(this.names.current),
      this.redis.hgetall(this.names.retired),
    ]);
    const next = new Map<string, LoadedKey>();
    for (const [kid, raw] of Object.entries(all)) {
      const stored = JSON.parse(raw) as StoredKey;
      const known = this.loaded.get(kid);
      const retiredAt = retired[kid] === undefined ? undefined : Number(retired[kid]);
      next.set(kid, {
        kid,
        publicJwk: stored.publicJwk,
        verifyKey: known?.verifyKey ?? (await importKey(stored.publicJwk)),
        createdAt: stored.createdAt,
        ...(retiredAt === undefined ? {} : { retiredAt }),
      });
      if (kid === current && this.signing?.kid !== kid) {
        this.signing = { kid, key: await this.privateKeyOf(stored) };
      }
    }
    this.loaded = next;
    if (current === null) this.signing = null;
  }

  private async privateKeyOf(stored: StoredKey): Promise<Key> {
    const cached = this.privateCache.get(stored.kid);
    if (cached) return cached;
    let jwk: JWK;
    if (stored.privateJwe !== undefined) {
      if (this.wrap === null)
        throw new Error(
          `token signing key ${stored.kid} is encrypted: set TOKEN_SIGNING_SECRET to the secret it was stored with`,
        );
      const { plaintext } = await compactDecrypt(stored.privateJwe, this.wrap);
      jwk = JSON.parse(new TextDecoder().decode(plaintext)) as JWK;
    } else if (stored.privateJwk !== undefined) jwk = stored.privateJwk;
    else throw new Error(`token signing key ${stored.kid} has no private part`);
    const key = await importKey(jwk);
    this.privateCache.clear(); // only the signing key is ever needed
    this.privateCache.set(stored.kid, key);
    return key;
  }

  /** The key that signs new tokens now. */
  current(): { kid: string; key: Key } {
    if (this.signing === null)
      throw new Error('no token signing key is loaded (the API did not start its key set)');
    return this.signing;
  }

  /**
   * The public key named by `kid`, reading the set again (at most every 250 ms) when it is not
   * known: a key rotated in on another API may sign before this one heard of it.
   */
  async verifyKey(kid: string | undefined): Promise<Key | null> {
    if (kid === undefined) return null;
    const known = this.loaded.get(kid);
    if (known) return this.usable(known) ? known.verifyKey : null;
    const now = Date.now();
    if (now - this.lastUnknownReload < 250) return null;
    this.lastUnknownReload = now;
    await this.reload();
    const again = this.loaded.get(kid);
    return again && this.usable(again) ? again.verifyKey : null;
  }

  private usable(key: LoadedKey): boolean {
    return key.retiredAt === undefined || key.retiredAt + this.maxTtlMs >= Date.now();
  }

  /** The JWKS document: public members only (kty, crv, x, y, kid, alg, use). */
  jwks(): { keys: JWK[] } {
    const keys: JWK[] = [];
    for (const k of this.loaded.values()) {
      if (!this.usable(k)) continue;
      const { kty, crv, x, y, kid, alg, use } = k.publicJwk;
      keys.push({ kty, crv, x, y, kid, alg, use });
    }
    return { keys };
  }

  /** Key ids for the admin listing (no key material). */
  list(): { kid: string; createdAt: number; retiredAt?: number; signing: boolean }[] {
    return [...this.loaded.values()].map((k) => ({
      kid: k.kid,
      createdAt: k.createdAt,
      ...(k.retiredAt === undefined ? {} : { retiredAt: k.retiredAt }),
      signing: this.signing?.kid === k.kid,
    }));
  }
}
