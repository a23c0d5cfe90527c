// The SDK set-up (tracing-sdk.ts) is not exported: startTracing imports it only when tracing is on.
export * from './trace-log.ts';
export * from './tracing.ts';
export * from './tracing-config.ts';
export { batonTracer, bullTelemetryOption, tracingActive } from './tracing-state.ts';
