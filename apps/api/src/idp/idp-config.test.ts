import { describe, expect, it } from 'vitest';
import { idpTenants } from './idp-config.ts';

const base = {
  tenant: 'acme',
  issuer: 'https://acme.example/',
  jwksUrl: 'https://acme.example/.well-known/jwks.json',
  audience: 'baton',
};

describe('IDP_TENANTS', () => {
  it('fills the defaults: sub, scope, RS256/ES256, own runs, no agents', () => {
    const [t] = idpTenants({ IDP_TENANTS: JSON.stringify([base]) });
    expect(t).toMatchObject({
      subjectClaim: 'sub',
      scopesClaim: 'scope',
      algorithms: ['RS256', 'ES256'],
      defaultScopes: ['runs:own', 'runs:start'],
      allowedAgents: [],
    });
    expect(idpTenants({ IDP_TENANTS: '' })).toEqual([]);
  });

  it('refuses what would weaken verification, naming the field', () => {
    const bad = (patch: object) => () =>
      idpTenants({ IDP_TENANTS: JSON.stringify([{ ...base, ...patch }]) });
    expect(bad({ algorithms: ['HS256'] })).toThrow(/algorithms/);
    expect(bad({ jwksUrl: 'http://acme.example/jwks' })).toThrow(/https/);
    expect(bad({ audience: undefined })).toThrow(/audience/);
    expect(() =>
      idpTenants({ IDP_TENANTS: JSON.stringify([base, { ...base, tenant: 'other' }]) }),
    ).toThrow(/configured twice/);
    expect(() => idpTenants({ IDP_TENANTS: '{not json' })).toThrow(/not JSON/);
    // http is fine for a provider on this machine
    expect(() =>
      idpTenants({
        IDP_TENANTS: JSON.stringify([{ ...base, jwksUrl: 'http://127.0.0.1:9/jwks' }]),
      }),
    ).not.toThrow();
  });
});
