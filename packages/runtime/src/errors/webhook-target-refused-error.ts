import { BatonError } from '@baton/protocol';

export type AddressCategory =
  'unspecified' | 'loopback' | 'private' | 'link_local' | 'cgnat' | 'multicast' | 'reserved';

/** 400 webhook_target_refused: the URL may not be called from inside the deployment. */
export class WebhookTargetRefusedError extends BatonError<'webhook_target_refused'> {
  readonly reason: AddressCategory | 'unresolvable' | 'credentials';
  constructor(
    message: string,
    reason: AddressCategory | 'unresolvable' | 'credentials',
    details: Record<string, unknown>,
  ) {
    super('webhook_target_refused', message, { reason, ...details });
    this.reason = reason;
  }
}
