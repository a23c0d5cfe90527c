import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, signWebhook, webhookHeaders, webhookSecretKey } from './signing.ts';

describe('Standard Webhooks signing', () => {
  it('matches the scheme’s published example', () => {
    // From the Standard Webhooks specification's example.
    expect(
      signWebhook(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('verifies with the standardwebhooks library, and fails on any change', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({ type: 'run.finished', data: { runId: 'r1' } });
    const now = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders(secret, 'msg_abc', now, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(generateWebhookSecret()).verify(body, headers)).toThrow();
    expect(() =>
      new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_other' }),
    ).toThrow();
  });

  it('generates whsec_ secrets of 32 bytes and refuses malformed ones', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(webhookSecretKey(secret)).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(secret);
    expect(() => webhookSecretKey('abc')).toThrow(/whsec_/);
    expect(() => webhookSecretKey('whsec_c2hvcnQ=')).toThrow(/24 to 64 bytes/);
    expect(() => webhookSecretKey('whsec_!!!!')).toThrow(/base64/);
  });
});
