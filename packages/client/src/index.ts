export * from './backoff.ts';
export * from './client.ts';
export * from './errors.ts';
export * from './payload-form.ts';
export * from './schedules.ts';
export * from './tokens.ts';
export { RunEventStream, endsStream, isRetryable } from './run-stream.ts';
export type { ReconnectInfo, StreamOptions, StreamUntil } from './run-stream.ts';
export type { ClientOptions, JsonResponse, RequestOptions } from './transport.ts';
