/**
 * REDIS_URL, the one setting that says which Redis Baton uses and what kind it is:
 * - `redis://[user:pass@]host:port[/db]`, `rediss://…` (TLS): one node, as ioredis reads it;
 * - `redis+cluster://[user:pass@]h1:p1,h2:p2`, `rediss+cluster://…`: a Redis Cluster, from its
 *   seed nodes (any few of its nodes; ioredis discovers the rest);
 * - `redis+sentinel://[user:pass@]h1:p1,h2:p2/<masterName>[/db]`, `rediss+sentinel://…`: the
 *   master Sentinel names (credentials are the master's; `?sentinelPassword=` for the Sentinels).
 */
import { RedisUrlError } from '../errors/redis-url-error.ts';

export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

interface Credentials {
  readonly username?: string;
  readonly password?: string;
}

export type RedisTarget =
  | { readonly kind: 'standalone'; readonly url: string }
  | ({
      readonly kind: 'cluster';
      readonly nodes: readonly RedisNode[];
      readonly tls: boolean;
    } & Credentials)
  | ({
      readonly kind: 'sentinel';
      readonly sentinels: readonly RedisNode[];
      readonly name: string;
      readonly tls: boolean;
      readonly db?: number;
      readonly sentinelPassword?: string;
    } & Credentials);

const SCHEMES = /^(rediss?)(\+cluster|\+sentinel)?:\/\//i;

const FORMS =
  'use redis://host:port or rediss://host:port (one node), redis+cluster://host:port[,host:port…] ' +
  '(Redis Cluster), or redis+sentinel://host:port[,host:port…]/<masterName> (Sentinel)';

function fail(problem: string): never {
  throw new RedisUrlError(`REDIS_URL ${problem}; ${FORMS}`);
}

function node(text: string, defaultPort: number): RedisNode {
  // [v6::addr]:port, host:port, or host alone.
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d+))?$/.exec(text);
  if (!match) fail(`has a host that cannot be read ("${text}")`);
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    fail(`has an invalid port in "${text}"`);
  return { host: (match[1] ?? match[2])!, port };
}

function credentials(userinfo: string | undefined): Credentials {
  if (userinfo === undefined) return {};
  const colon = userinfo.indexOf(':');
  const username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
  const password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1));
  // `redis://:pass@host` is the classic password-only form (no ACL user).
  return {
    ...(username === '' ? {} : { username }),
    ...(password === undefined || password === '' ? {} : { password }),
  };
}

/** What REDIS_URL names; throws RedisUrlError with one line naming REDIS_URL when it is not valid. */
export function parseRedisUrl(url: string): RedisTarget {
  const scheme = SCHEMES.exec(url);
  if (!scheme) fail(`must start with redis://, rediss://, redis+cluster:// or redis+sentinel://`);
  const tls = scheme[1]!.toLowerCase() === 'rediss';
  const kind = scheme[2]?.toLowerCase();
  if (kind === undefined) {
    try {
      new URL(url);
    } catch {
      fail('is not a valid URL');
    }
    return { kind: 'standalone', url };
  }
  const rest = url.slice(scheme[0].length);
  const [beforeQuery = '', query = ''] = rest.split('?', 2);
  const slash = beforeQuery.indexOf('/');
  const authority = slash < 0 ? beforeQuery : beforeQuery.slice(0, slash);
  const path = slash < 0 ? '' : beforeQuery.slice(slash + 1);
  const at = authority.lastIndexOf('@');
  const creds = credentials(at < 0 ? undefined : authority.slice(0, at));
  const hosts = (at < 0 ? authority : authority.slice(at + 1)).split(',').filter((h) => h !== '');
  if (hosts.length === 0) fail('names no host');
  if (kind === '+cluster') {
    if (path.replace(/\/+$/, '') !== '')
      fail('for a cluster takes no path (a cluster has only database 0)');
    return { kind: 'cluster', nodes: hosts.map((h) => node(h, 6379)), tls, ...creds };
  }
  const [name = '', dbText] = path.split('/').map((p) => decodeURIComponent(p));
  if (name === '') fail('for Sentinel must end with /<masterName>');
  const db = dbText === undefined || dbText === '' ? undefined : Number(dbText);
  if (db !== undefined && (!Number.isInteger(db) || db < 0))
    fail(`has an invalid database number "${dbText}"`);
  const sentinelPassword = new URLSearchParams(query).get('sentinelPassword');
  return {
    kind: 'sentinel',
    sentinels: hosts.map((h) => node(h, 26379)),
    name,
    tls,
    ...creds,
    ...(db === undefined ? {} : { db }),
    ...(sentinelPassword === null ? {} : { sentinelPassword }),
  };
}

/** The URL with its password (and a Sentinel password) replaced by ***, for logs and errors. */
export function redactRedisUrl(url: string): string {
  return url
    .replace(/(:\/\/[^/@?]*?:)[^/@?]*@/, '$1***@')
    .replace(/([?&]sentinelPassword=)[^&]*/i, '$1***');
}
