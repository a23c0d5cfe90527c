import { describe, expect, it } from 'vitest';
import { isBatonError } from '@baton/protocol';
import { RedisUrlError } from '../errors/redis-url-error.ts';
import { parseRedisUrl, redactRedisUrl } from './redis-url.ts';

describe('parseRedisUrl', () => {
  it('one node: redis:// and rediss:// are passed to ioredis as they are', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({
      kind: 'standalone',
      url: 'redis://127.0.0.1:6379',
    });
    expect(parseRedisUrl('rediss://:pw@cache.example.com:6380/2').kind).toBe('standalone');
  });

  it('a cluster: seed nodes, credentials (decoded), TLS, default port', () => {
    expect(parseRedisUrl('redis+cluster://h1:7000,h2:7001,h3')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'h1', port: 7000 },
        { host: 'h2', port: 7001 },
        { host: 'h3', port: 6379 },
      ],
      tls: false,
    });
    expect(parseRedisUrl('rediss+cluster://app:p%40ss@[::1]:7000,10.0.0.2:7000/')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '::1', port: 7000 },
        { host: '10.0.0.2', port: 7000 },
      ],
      tls: true,
      username: 'app',
      password: 'p@ss',
    });
    // Password only (no ACL user).
    expect(parseRedisUrl('redis+cluster://:secret@h1:7000')).toMatchObject({
      password: 'secret',
    });
  });

  it('Sentinel: sentinels, the master name, a database and the Sentinels’ password', () => {
    expect(
      parseRedisUrl('rediss+sentinel://u:p@s1:26379,s2/mymaster/3?sentinelPassword=sp'),
    ).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'mymaster',
      tls: true,
      username: 'u',
      password: 'p',
      db: 3,
      sentinelPassword: 'sp',
    });
  });

  it.each([
    ['http://h:6379', /REDIS_URL must start with redis:\/\//],
    ['redis+cluster://', /REDIS_URL names no host/],
    ['redis+cluster://h1:99999', /invalid port in "h1:99999"/],
    ['redis+cluster://h1:7000/1', /takes no path/],
    ['redis+sentinel://s1:26379', /must end with \/<masterName>/],
    ['redis+sentinel://s1/m/x', /invalid database number/],
    ['redis://exa mple:6379', /REDIS_URL is not a valid URL/],
  ])('refuses %s naming REDIS_URL and the forms it takes', (url, problem) => {
    expect(() => parseRedisUrl(url)).toThrow(problem);
    expect(() => parseRedisUrl(url)).toThrow(/redis\+cluster:\/\/host:port\[,host:port…\]/);
  });

  it('refuses with a BatonError coded config, which the API prints as one line', () => {
    const error: unknown = (() => {
      try {
        parseRedisUrl('http://h:6379');
      } catch (caught) {
        return caught;
      }
    })();
    expect(isBatonError(error, 'config')).toBe(true);
    expect(RedisUrlError.isInstance(error)).toBe(true);
  });
});

describe('redactRedisUrl', () => {
  it('hides passwords of every form', () => {
    expect(redactRedisUrl('redis+cluster://app:s3cret@h1:1,h2:2')).toBe(
      'redis+cluster://app:***@h1:1,h2:2',
    );
    expect(redactRedisUrl('redis+sentinel://:pw@s1/m?sentinelPassword=x')).toBe(
      'redis+sentinel://:***@s1/m?sentinelPassword=***',
    );
    expect(redactRedisUrl('redis+cluster://h1:1,h2:2')).toBe('redis+cluster://h1:1,h2:2');
  });
});
