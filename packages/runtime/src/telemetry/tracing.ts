import { trace } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import type { Telemetry } from 'bullmq';
import { activateTracing } from './tracing-state.ts';
import { tracingSettingsFromEnv, type TracingSettings } from './tracing-config.ts';
import { processEnv } from '../config/process-env.ts';

/** The tracer name of Baton's own spans (HTTP, model calls, tool calls). */
const BATON_TRACER = 'baton';

export interface StartTracingOptions {
  /** service.name unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says otherwise. */
  readonly serviceName: string;
  /** Where OTEL_* are read (default: the process's environment). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Export here instead of what the environment names, and trace whatever it says (tests pass an
   * InMemorySpanExporter from @opentelemetry/sdk-trace).
   */
  readonly exporter?: SpanExporter;
}

export interface TracingHandle {
  readonly settings: TracingSettings;
  /** Exports every ended span now. */
  forceFlush(): Promise<void>;
  /** Exports what is left (waiting at most `timeoutMs`, default 5 s), then turns tracing off. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** BullMQ's own OpenTelemetry integration: producer and consumer spans, context in job opts. */
async function bullTelemetry(): Promise<Telemetry> {
  const { BullMQOtel } = await import('bullmq-otel');
  return new BullMQOtel({ tracerName: 'bullmq' });
}

/**
 * Turns tracing on for this process when the standard OTEL_* environment asks for it (see
 * tracing-config.ts) and returns its handle; returns null, having loaded nothing, when it does
 * not. Call it before creating loggers, queues and workers: they look once, when created.
 */
export async function startTracing(opts: StartTracingOptions): Promise<TracingHandle | null> {
  const env = opts.env ?? processEnv();
  const settings = opts.exporter
    ? tracingSettingsFromEnv({ ...env, OTEL_TRACES_EXPORTER: 'otlp' }, opts.serviceName)
    : tracingSettingsFromEnv(env, opts.serviceName);
  if (!settings) return null;
  const { installSdk } = await import('./tracing-sdk.ts');
  const sdk = installSdk(settings, opts.exporter);
  activateTracing({ tracer: trace.getTracer(BATON_TRACER), bull: await bullTelemetry() });
  return {
    settings,
    forceFlush: () => sdk.forceFlush(),
    shutdown: async (timeoutMs = 5_000) => {
      activateTracing(null);
      // A collector that hangs must not hold a stopping process: export what can go in time.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        sdk.shutdown(),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
          timer.unref();
        }),
      ]).finally(() => clearTimeout(timer));
    },
  };
}

/**
 * For an application that registers its own OpenTelemetry SDK (e.g. around createWorker): Baton
 * makes its spans with the global tracer provider and propagates through the global propagator,
 * and loads no SDK of its own. Call it after registering yours.
 */
export async function useGlobalTracing(): Promise<void> {
  activateTracing({ tracer: trace.getTracer(BATON_TRACER), bull: await bullTelemetry() });
}
