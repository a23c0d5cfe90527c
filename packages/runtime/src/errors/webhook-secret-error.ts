import { BatonError } from '@baton/protocol';

/** A webhook secret that is not `whsec_` + base64 of 24 to 64 bytes. */
export class WebhookSecretError extends BatonError<'webhook_secret'> {
  constructor(message: string) {
    super('webhook_secret', message);
  }
}
