import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config.ts';
import { parseTenantWebhooks } from './tenant-webhooks.ts';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe('TENANT_WEBHOOKS', () => {
  it('parses tenant:secret:url entries from the variable and the file', () => {
    const map = parseTenantWebhooks(
      {
        TENANT_WEBHOOKS: `acme:${SECRET}:https://hooks.acme.example/baton?x=1`,
        TENANT_WEBHOOKS_FILE: '/etc/hooks',
      },
      () => `# ops\nbeta:${SECRET}:http://hooks.beta.example:8080/in\n`,
    );
    expect([...map.keys()]).toEqual(['acme', 'beta']);
    expect(map.get('acme')).toEqual({
      url: 'https://hooks.acme.example/baton?x=1',
      secret: SECRET,
    });
    expect(map.get('beta')?.url).toBe('http://hooks.beta.example:8080/in');
  });

  it.each([
    ['acme', /must look like tenant:whsec_/],
    [`acme:${SECRET}`, /must look like/],
    [`ac me:${SECRET}:https://x.example`, /may only contain/],
    ['acme:whsec_c2hvcnQ=:https://x.example', /24 to 64 bytes/],
    [`acme:${SECRET}:ftp://x.example`, /http:\/\/ or https:\/\//],
    [`acme:${SECRET}:https://a.example,acme:${SECRET}:https://b.example`, /listed twice/],
  ])('refuses %s with a line that says what to fix, never the secret', (entry, message) => {
    let error: unknown;
    try {
      parseTenantWebhooks({ TENANT_WEBHOOKS: entry });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain(SECRET);
  });
});
