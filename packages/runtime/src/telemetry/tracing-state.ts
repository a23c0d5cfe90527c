import type { Tracer } from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';

/**
 * Whether this process traces, and with what. One flag per process, like OpenTelemetry's own
 * global provider: set by startTracing / useGlobalTracing, read where spans could be made. When
 * it is unset, queues and workers get no BullMQ telemetry and no Baton span code runs at all.
 */
interface ActiveTracing {
  readonly tracer: Tracer;
  readonly bull: Telemetry;
}

let active: ActiveTracing | null = null;

export function tracingActive(): boolean {
  return active !== null;
}

/** Baton's tracer; only meaningful while tracingActive(). */
export function batonTracer(): Tracer | undefined {
  return active?.tracer;
}

/**
 * `{ telemetry }` for a BullMQ Queue, Worker or FlowProducer while tracing, else `{}`: spread
 * into their options, so an untraced process passes BullMQ nothing and BullMQ skips every span.
 */
export function bullTelemetryOption(): { telemetry?: Telemetry } {
  return active ? { telemetry: active.bull } : {};
}

/** @internal set by startTracing / useGlobalTracing. */
export function activateTracing(tracing: ActiveTracing | null): void {
  active = tracing;
}
