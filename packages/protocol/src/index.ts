export * from './checkpoint.ts';
export * from './child-runs.ts';
export * from './content-pattern.ts';
export * from './decisions.ts';
export * from './enums.ts';
export * from './errors.ts';
export * from './baton-error.ts';
export type * from './internal-error-codes.ts';
export * from './events.ts';
export * from './fairness.ts';
export * from './jobs.ts';
export * from './json.ts';
export * from './json-depth.ts';
export * from './messages.ts';
export * from './run-request.ts';
export * from './stop-conditions.ts';
export * from './termination.ts';
export * from './tools.ts';
export * from './usage.ts';

/** Wire version of everything in this package. */
export const PROTOCOL_VERSION = 1;
export * from './snapshot.ts';
export * from './agents.ts';
export * from './http.ts';
// Scheduled runs (issue 13)
export * from './schedules.ts';
export * from './webhooks.ts';
export * from './wire-facts.ts';
