import type { RedisClient } from '@baton/runtime';
import type { TokenKeys } from '@baton/runtime/internal';

/** One revocation: a token by its id, or every token of a subject issued until `at`. */
export type Revocation =
  | { readonly kind: 'jti'; readonly tenantId: string; readonly jti: string }
  | {
      readonly kind: 'subject';
      readonly tenantId: string;
      readonly subject: string;
      /** Tokens issued (iat, seconds) at or before this second are refused. */
      readonly at: number;
    };

/** What a revocation is checked against: the token's tenant, id, subject and issue time (s). */
export interface RevocableToken {
  readonly tenantId: string;
  readonly jti: string;
  readonly subject?: string;
  readonly issuedAt: number;
}

function memberOf(r: Revocation): string {
  return JSON.stringify(r);
}

const subjectKey = (tenantId: string, subject: string): string => `${tenantId}\u0000${subject}`;

/**
 * Revoked tokens, in Redis (a sorted set scored by when each entry stops mattering: the longest
 * token lifetime after the revoke) and in every API's memory, so a request's check costs no
 * round trip. A revoke is published; each API applies it on the message, and re-reads the whole
 * set every few seconds and after its subscription reconnects, so a lost message is made good.
 */
export class Revocations {
  private readonly redis: RedisClient;
  private readonly names: TokenKeys;
  private readonly maxTtlMs: number;
  private jtis = new Set<string>();
  private subjects = new Map<string, number>();
  /** Called for each revocation applied here (to close the streams it concerns). */
  onRevoked: ((r: Revocation) => void) | undefined;

  constructor(redis: RedisClient, names: TokenKeys, maxTtlMs: number) {
    this.redis = redis;
    this.names = names;
    this.maxTtlMs = maxTtlMs;
  }

  /** Stores and broadcasts a revocation; this API applies it at once. */
  async revoke(r: Revocation): Promise<void> {
    const member = memberOf(r);
    const now = Date.now();
    await this.redis.zadd(this.names.revoked, now + this.maxTtlMs, member);
    await this.redis.zremrangebyscore(this.names.revoked, '-inf', now);
    this.apply(r);
    await this.redis.publish(this.names.channel, `revoked ${member}`);
  }

  /** A message of the tokens channel (`revoked <json>`). */
  applyMessage(message: string): void {
    if (!message.startsWith('revoked ')) return;
    try {
      this.apply(JSON.parse(message.slice('revoked '.length)) as Revocation);
    } catch {
      // another release's message shape: the periodic reload reads the set
    }
  }

  private apply(r: Revocation): void {
    if (r.kind === 'jti') this.jtis.add(`${r.tenantId}\u0000${r.jti}`);
    else {
      const key = subjectKey(r.tenantId, r.subject);
      this.subjects.set(key, Math.max(this.subjects.get(key) ?? 0, r.at));
    }
    this.onRevoked?.(r);
  }

  /** Reads every live revocation (start, reconnect, and every few seconds). */
  async reload(): Promise<void> {
    const members = await this.redis.zrangebyscore(this.names.revoked, Date.now(), '+inf');
    const jtis = new Set<string>();
    const subjects = new Map<string, number>();
    const fresh: Revocation[] = [];
    for (const member of members) {
      let r: Revocation;
      try {
        r = JSON.parse(member) as Revocation;
      } catch {
        continue;
      }
      if (r.kind === 'jti') {
        const key = `${r.tenantId}\u0000${r.jti}`;
        if (!this.jtis.has(key)) fresh.push(r);
        jtis.add(key);
      } else {
        const key = subjectKey(r.tenantId, r.subject);
        if ((this.subjects.get(key) ?? 0) < r.at) fresh.push(r);
        subjects.set(key, Math.max(subjects.get(key) ?? 0, r.at));
      }
    }
    this.jtis = jtis;
    this.subjects = subjects;
    // What a lost message did not tell this API: its streams are closed now.
    for (const r of fresh) this.onRevoked?.(r);
  }

  isRevoked(t: RevocableToken): boolean {
    if (this.jtis.has(`${t.tenantId}\u0000${t.jti}`)) return true;
    if (t.subject === undefined) return false;
    const at = this.subjects.get(subjectKey(t.tenantId, t.subject));
    return at !== undefined && t.issuedAt <= at;
  }
}

interface Tracked {
  readonly token: RevocableToken;
  readonly close: () => void;
}

/**
 * Streams open on this API with a token, by token id and by subject: a revoke closes them.
 */
export class TokenStreams {
  private readonly byJti = new Map<string, Set<Tracked>>();
  private readonly bySubject = new Map<string, Set<Tracked>>();

  get size(): number {
    let n = 0;
    for (const set of this.byJti.values()) n += set.size;
    return n;
  }

  /** Registers a stream; the returned function forgets it (call it when the stream ends). */
  track(token: RevocableToken, close: () => void): () => void {
    const entry: Tracked = { token, close };
    const jtiKey = `${token.tenantId}\u0000${token.jti}`;
    add(this.byJti, jtiKey, entry);
    const subKey = token.subject === undefined ? null : subjectKey(token.tenantId, token.subject);
    if (subKey !== null) add(this.bySubject, subKey, entry);
    return () => {
      remove(this.byJti, jtiKey, entry);
      if (subKey !== null) remove(this.bySubject, subKey, entry);
    };
  }

  /** Closes the streams a revocation concerns. */
  close(r: Revocation): void {
    const matching =
      r.kind === 'jti'
        ? [...(this.byJti.get(`${r.tenantId}\u0000${r.jti}`) ?? [])]
        : [...(this.bySubject.get(subjectKey(r.tenantId, r.subject)) ?? [])].filter(
            (t) => t.token.issuedAt <= r.at,
          );
    for (const t of matching) t.close();
  }
}

function add(map: Map<string, Set<Tracked>>, key: string, entry: Tracked): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(entry);
}

function remove(map: Map<string, Set<Tracked>>, key: string, entry: Tracked): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(entry);
  if (set.size === 0) map.delete(key);
}
