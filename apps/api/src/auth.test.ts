import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { KeyStore, hashKey, presentedKey } from './auth.ts';
import { splitEntries } from './config.ts';

const req = (headers: Record<string, string>): Request => ({ headers }) as unknown as Request;

describe('API keys', () => {
  it('verifies plain and pre-hashed keys and maps them to tenants', () => {
    const keys = new KeyStore(
      ['acme:acme-secret-1', `globex:sha256:${hashKey('globex-secret')}`],
      ['ops:admin-secret-1'],
    );
    expect(keys.verify('acme-secret-1')).toMatchObject({
      tenantId: 'acme',
      admin: false,
      scopes: null,
    });
    expect(keys.verify('globex-secret')).toMatchObject({ tenantId: 'globex', admin: false });
    expect(keys.verify('admin-secret-1')).toMatchObject({ tenantId: 'ops', admin: true });
    expect(keys.verify('acme-secret-2')).toBeNull();
    expect(keys.verify('')).toBeNull();
  });

  it('keys may contain colons; the tenant is before the first one', () => {
    const keys = new KeyStore(['acme:with:colons:inside']);
    expect(keys.verify('with:colons:inside')?.tenantId).toBe('acme');
  });

  it('rejects malformed entries with a message naming the problem', () => {
    expect(() => new KeyStore(['no-colon'])).toThrow(/name:key/);
    expect(() => new KeyStore(['bad tenant:long-enough-key'])).toThrow(/may only contain/);
    expect(() => new KeyStore(['acme:short'])).toThrow(/shorter than 8/);
    expect(() => new KeyStore([], ['ops:'])).toThrow(/ADMIN_KEYS/);
  });

  it('reads Bearer, X-API-Key and Basic credentials', () => {
    expect(presentedKey(req({ authorization: 'Bearer abc' }))).toBe('abc');
    expect(presentedKey(req({ authorization: 'bearer   abc' }))).toBe('abc');
    expect(presentedKey(req({ 'x-api-key': 'xyz' }))).toBe('xyz');
    expect(
      presentedKey(req({ authorization: `Basic ${Buffer.from('admin:pw-1').toString('base64')}` })),
    ).toBe('pw-1');
    expect(presentedKey(req({ authorization: 'Token abc' }))).toBeNull();
    expect(presentedKey(req({}))).toBeNull();
  });

  it('splits env and file entries (commas, newlines, comments)', () => {
    expect(splitEntries('a:1234567890, b:1234567890\n# comment\n\nc:1234567890')).toEqual([
      'a:1234567890',
      'b:1234567890',
      'c:1234567890',
    ]);
  });
});
