/**
 * The OpenTelemetry SDK set-up. Loaded only by startTracing (a dynamic import) once the
 * environment turned tracing on: an untraced process never loads a module of the SDK.
 */
import {
  SpanKind,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Link,
  type TextMapPropagator,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  processDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SamplingResult,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import type { TracingSettings } from './tracing-config.ts';
import { ConfigError } from '../errors/config-error.ts';

/**
 * BullMQ traces its own housekeeping (the blocking wait for a job, the stalled-job check, queue
 * cleaning) as INTERNAL spans with no parent: every few seconds per queue, each its own trace.
 * They say nothing about a run, so a root INTERNAL span is dropped; every span Baton cares about
 * is a SERVER, PRODUCER, CONSUMER or CLIENT span, or has a parent.
 */
class QuietRootSampler implements Sampler {
  private readonly inner: Sampler;
  constructor(inner: Sampler) {
    this.inner = inner;
  }

  shouldSample(
    ctx: Context,
    traceId: string,
    name: string,
    kind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult {
    if (kind === SpanKind.INTERNAL && trace.getSpanContext(ctx) === undefined)
      return { decision: SamplingDecision.NOT_RECORD };
    return this.inner.shouldSample(ctx, traceId, name, kind, attributes, links);
  }

  toString(): string {
    return `QuietRootSampler{${this.inner.toString()}}`;
  }
}

function sampler(settings: TracingSettings): Sampler {
  const { name, ratio } = settings.sampler;
  const root =
    name.endsWith('always_off') || (name.endsWith('traceidratio') && ratio === 0)
      ? new AlwaysOffSampler()
      : name.endsWith('traceidratio')
        ? new TraceIdRatioBasedSampler(ratio)
        : new AlwaysOnSampler();
  return new QuietRootSampler(
    name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root,
  );
}

function propagator(settings: TracingSettings): TextMapPropagator {
  return new CompositePropagator({
    propagators: settings.propagators.map((p) =>
      p === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator(),
    ),
  });
}

export interface InstalledSdk {
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Registers a tracer provider, the AsyncLocalStorage context manager and the W3C propagators as
 * OpenTelemetry's globals. `exporter` replaces what OTEL_TRACES_EXPORTER names (tests: an
 * InMemorySpanExporter, exported span by span so a test sees a span as soon as it ends).
 */
export function installSdk(settings: TracingSettings, exporter?: SpanExporter): InstalledSdk {
  const processors: SpanProcessor[] = exporter
    ? [new SimpleSpanProcessor({ exporter })]
    : settings.exporters.map((name) =>
        name === 'console'
          ? new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() })
          : // The URL as read from the settings' environment; OTEL_EXPORTER_OTLP_(TRACES_)HEADERS,
            // _TIMEOUT and _COMPRESSION the exporter reads from the environment itself.
            new BatchSpanProcessor({
              exporter: new OTLPTraceExporter(
                settings.otlpTracesUrl === undefined ? {} : { url: settings.otlpTracesUrl },
              ),
              ...settings.batch,
            }),
      );
  // Later wins: the SDK's defaults, then Baton's service name, then OTEL_RESOURCE_ATTRIBUTES and
  // OTEL_SERVICE_NAME as the environment gives them.
  const resource = defaultResource()
    .merge(detectResources({ detectors: [hostDetector, processDetector] }))
    .merge(resourceFromAttributes({ 'service.name': settings.serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: sampler(settings),
    spanProcessors: processors,
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  if (!trace.setGlobalTracerProvider(provider)) {
    contextManager.disable();
    throw new ConfigError(
      'an OpenTelemetry SDK is already registered in this process; let Baton use it with useGlobalTracing() instead of startTracing()',
    );
  }
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(propagator(settings));
  return {
    forceFlush: () => provider.forceFlush(),
    shutdown: async () => {
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
