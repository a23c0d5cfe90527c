import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  WebhookTargetPolicy,
  WebhookTargetRefusedError,
  classifyAddress,
  parseAllowedHosts,
} from './target-policy.ts';

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fc00::1', 'private'],
    ['169.254.169.254', 'link_local'],
    ['fe80::1', 'link_local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.10', 'reserved'],
    // IPv6 forms that carry an IPv4 address are judged by that address.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link_local'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:c0a8:101::1', 'private'],
  ])('%s is %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    '%s is public',
    (address) => {
      expect(classifyAddress(address)).toBeNull();
    },
  );
});

const strict = new WebhookTargetPolicy({ allowPrivate: false, allowedHosts: [] });

async function refusal(policy: WebhookTargetPolicy, url: string): Promise<unknown> {
  return policy.check(url).then(
    () => null,
    (e: unknown) => e,
  );
}

describe('WebhookTargetPolicy', () => {
  it('refuses internal targets at registration with a code and a message that says why', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://[::1]/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.5/',
      'https://localhost/hook',
    ]) {
      const error = await refusal(strict, url);
      expect(error, url).toBeInstanceOf(WebhookTargetRefusedError);
      expect((error as WebhookTargetRefusedError).code).toBe('webhook_target_refused');
      expect((error as Error).message).toMatch(/BATON_WEBHOOK_ALLOW_PRIVATE/);
    }
    expect(((await refusal(strict, 'http://localhost/')) as Error).message).toMatch(
      /localhost resolves to .*loopback/,
    );
  });

  it('refuses credentials in the URL and hosts that do not resolve', async () => {
    const creds = (await refusal(strict, 'https://user:pw@8.8.8.8/')) as WebhookTargetRefusedError;
    expect(creds.reason).toBe('credentials');
    const nx = (await refusal(
      strict,
      'https://no-such-host.invalid/',
    )) as WebhookTargetRefusedError;
    expect(nx.reason).toBe('unresolvable');
  });

  it('accepts public literals, and anything when explicitly allowed', async () => {
    expect(await refusal(strict, 'https://8.8.8.8/hook')).toBeNull();
    const open = new WebhookTargetPolicy({ allowPrivate: true, allowedHosts: [] });
    expect(await refusal(open, 'http://127.0.0.1:9/')).toBeNull();
    const listed = new WebhookTargetPolicy({
      allowPrivate: false,
      allowedHosts: parseAllowedHosts(' LocalHost , [::1]'),
    });
    expect(await refusal(listed, 'http://localhost:9/')).toBeNull();
    expect(await refusal(listed, 'http://[::1]:9/')).toBeNull();
    expect(await refusal(listed, 'http://127.0.0.1:9/')).toBeInstanceOf(WebhookTargetRefusedError);
  });

  it('its lookup (what a delivery connects through) refuses what resolves inside', async () => {
    const viaLookup = (policy: WebhookTargetPolicy, host: string, all: boolean) =>
      new Promise<{ err: unknown; address: string | LookupAddress[] }>((resolve) =>
        policy.lookup(host, { all }, (err, address) => resolve({ err, address })),
      );
    for (const all of [true, false]) {
      const { err } = await viaLookup(strict, 'localhost', all);
      expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    }
    const open = new WebhookTargetPolicy({ allowPrivate: true, allowedHosts: [] });
    const some = await viaLookup(open, 'localhost', true);
    expect(some.err).toBeNull();
    expect(Array.isArray(some.address) && some.address.length).toBeGreaterThan(0);
    const one = await viaLookup(open, 'localhost', false);
    expect(typeof one.address).toBe('string');
  });
});
