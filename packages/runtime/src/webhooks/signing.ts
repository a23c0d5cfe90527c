import { createHash, createHmac, randomBytes } from 'node:crypto';
import { WebhookSecretError } from '../errors/webhook-secret-error.ts';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the signature is
 * `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>` where the key is the base64-decoded
 * part of a `whsec_<base64>` secret. Receivers verify it with any Standard Webhooks library.
 */

const SECRET_PREFIX = 'whsec_';

/** A new secret: 32 random bytes, `whsec_` + base64. */
export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The HMAC key of a `whsec_` secret (24 to 64 bytes, as the scheme asks). */
export function webhookSecretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX))
    throw new WebhookSecretError('a webhook secret must start with "whsec_"');
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64))
    throw new WebhookSecretError('a webhook secret must be "whsec_" followed by base64');
  const key = Buffer.from(b64, 'base64');
  if (key.length < 24 || key.length > 64)
    throw new WebhookSecretError(
      `a webhook secret must hold 24 to 64 bytes (this one holds ${key.length})`,
    );
  return key;
}

/** The `webhook-signature` header value for one attempt. */
export function signWebhook(
  secret: string,
  webhookId: string,
  timestampSeconds: number,
  body: string,
): string {
  const mac = createHmac('sha256', webhookSecretKey(secret))
    .update(`${webhookId}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/**
 * The `webhook-id` of the message reporting event `seq` of a run: a function of the run and the
 * event alone, so every retry, every redelivery after a crash, and every endpoint (run and
 * tenant) carry the same id and a receiver can deduplicate on it.
 */
export function webhookIdFor(runId: string, seq: number, type: string): string {
  const digest = createHash('sha256').update(`${runId}\n${seq}\n${type}`).digest('base64url');
  return `msg_${digest.slice(0, 27)}`;
}

/** The headers of one attempt (timestamp in seconds, as the scheme says). */
export function webhookHeaders(
  secret: string,
  webhookId: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Baton-Webhooks/1',
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signWebhook(secret, webhookId, timestampSeconds, body),
  };
}
