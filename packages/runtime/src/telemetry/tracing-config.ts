/**
 * Which traces a process exports, read from the standard OpenTelemetry environment variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/; listed in
 * config/env-keys.ts). A value Baton cannot honour throws the configuration's ConfigError, naming
 * the variable and what it accepts. Pure: deciding "off" must cost nothing, so this file loads
 * no SDK.
 */

import { ConfigError } from '../errors/config-error.ts';

export type TracesExporterName = 'otlp' | 'console';

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export interface TracingSettings {
  /** OTEL_SERVICE_NAME, else the process's default (`baton-api`, `baton-worker`). */
  readonly serviceName: string;
  readonly exporters: readonly TracesExporterName[];
  /**
   * Where OTLP goes: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else OTEL_EXPORTER_OTLP_ENDPOINT
   * plus `/v1/traces`; unset: the exporter's default (http://localhost:4318/v1/traces).
   */
  readonly otlpTracesUrl?: string;
  readonly sampler: { readonly name: SamplerName; readonly ratio: number };
  /** OTEL_BSP_*: the batch span processor; unset fields keep the SDK's defaults. */
  readonly batch: {
    readonly scheduledDelayMillis?: number;
    readonly exportTimeoutMillis?: number;
    readonly maxQueueSize?: number;
    readonly maxExportBatchSize?: number;
  };
  /** OTEL_PROPAGATORS: W3C trace context (and baggage) are the only ones Baton ships. */
  readonly propagators: readonly ('tracecontext' | 'baggage')[];
}

type Env = Readonly<Record<string, string | undefined>>;

function value(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

function list(env: Env, name: string): string[] | undefined {
  const v = value(env, name);
  return v === undefined
    ? undefined
    : v
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter((s) => s !== '');
}

function positiveInt(env: Env, name: string): number | undefined {
  const v = value(env, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) <= 0)
    throw new ConfigError(`${name}="${v}" is not a positive integer (milliseconds or spans)`);
  return Number(v);
}

/** The service.name entry of OTEL_RESOURCE_ATTRIBUTES (`k=v,k=v`, values percent-encoded). */
function resourceServiceName(env: Env): string | undefined {
  for (const pair of value(env, 'OTEL_RESOURCE_ATTRIBUTES')?.split(',') ?? []) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === 'service.name') {
      const raw = pair.slice(at + 1).trim();
      try {
        return decodeURIComponent(raw) || undefined;
      } catch {
        return raw || undefined;
      }
    }
  }
  return undefined;
}

/**
 * The tracing settings, or null when tracing is off: it is on when OTEL_TRACES_EXPORTER names an
 * exporter or an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, or ..._TRACES_ENDPOINT), and
 * OTEL_SDK_DISABLED is not `true`. `OTEL_TRACES_EXPORTER=none` turns it off whatever else is set.
 */
export function tracingSettingsFromEnv(
  env: Env,
  defaultServiceName: string,
): TracingSettings | null {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const named = list(env, 'OTEL_TRACES_EXPORTER');
  const endpoint =
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (named?.includes('none')) return null;
  if (named === undefined && endpoint === undefined) return null;
  const exporters: TracesExporterName[] = [];
  for (const name of named ?? ['otlp']) {
    if (name !== 'otlp' && name !== 'console')
      throw new ConfigError(
        `OTEL_TRACES_EXPORTER="${name}" is not supported; use otlp (OTLP over HTTP/JSON), console or none`,
      );
    if (!exporters.includes(name)) exporters.push(name);
  }
  const protocol =
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? value(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (exporters.includes('otlp') && protocol === 'grpc')
    throw new ConfigError(
      'OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported; Baton exports OTLP over HTTP (http/json, port 4318)',
    );
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
    const url = value(env, name);
    if (url !== undefined && !/^https?:\/\/[^/]/i.test(url))
      throw new ConfigError(
        `${name}="${url}" is not an http(s) URL; use e.g. http://localhost:4318`,
      );
  }

  const samplerName = (value(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on').toLowerCase();
  if (!SAMPLERS.includes(samplerName as SamplerName))
    throw new ConfigError(
      `OTEL_TRACES_SAMPLER="${samplerName}" is not supported; use one of ${SAMPLERS.join(', ')}`,
    );
  const arg = value(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (samplerName.endsWith('traceidratio') && (!Number.isFinite(ratio) || ratio < 0 || ratio > 1))
    throw new ConfigError(
      `OTEL_TRACES_SAMPLER_ARG="${arg ?? ''}" is not a ratio; use a number from 0 to 1`,
    );

  const propagators: ('tracecontext' | 'baggage')[] = [];
  for (const name of list(env, 'OTEL_PROPAGATORS') ?? ['tracecontext', 'baggage']) {
    if (name === 'none') continue;
    if (name !== 'tracecontext' && name !== 'baggage')
      throw new ConfigError(
        `OTEL_PROPAGATORS="${name}" is not supported; use tracecontext, baggage or none`,
      );
    propagators.push(name);
  }

  const batch: Record<string, number> = {};
  const bsp = {
    scheduledDelayMillis: positiveInt(env, 'OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: positiveInt(env, 'OTEL_BSP_EXPORT_TIMEOUT'),
    maxQueueSize: positiveInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: positiveInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  };
  for (const [k, v] of Object.entries(bsp)) if (v !== undefined) batch[k] = v;

  const specific = value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const generic = value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const otlpTracesUrl =
    specific ?? (generic ? `${generic.replace(/\/+$/, '')}/v1/traces` : undefined);

  return {
    ...(otlpTracesUrl === undefined ? {} : { otlpTracesUrl }),
    serviceName: value(env, 'OTEL_SERVICE_NAME') ?? resourceServiceName(env) ?? defaultServiceName,
    exporters,
    sampler: { name: samplerName as SamplerName, ratio: arg === undefined ? 1 : ratio },
    batch,
    propagators,
  };
}
