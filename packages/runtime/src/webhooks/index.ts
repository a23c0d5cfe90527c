export * from './backoff.ts';
export * from './signing.ts';
export * from './target-policy.ts';
export * from './webhook-config.ts';
export * from './webhook-messages.ts';
export * from './webhook-outbox.ts';
export * from './webhook-store.ts';
