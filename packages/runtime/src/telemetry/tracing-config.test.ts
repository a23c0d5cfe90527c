import { describe, expect, it } from 'vitest';
import { tracingSettingsFromEnv } from './tracing-config.ts';
import { ConfigError } from '../errors/config-error.ts';

const on = (env: Readonly<Record<string, string | undefined>>) =>
  tracingSettingsFromEnv(env, 'baton-worker');

describe('tracingSettingsFromEnv', () => {
  it('is off unless an exporter or an OTLP endpoint is named', () => {
    expect(on({})).toBeNull();
    expect(on({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeNull();
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeNull();
  });

  it('is on with an endpoint (either one) or an exporter, exporting OTLP by default', () => {
    for (const env of [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' },
      { OTEL_TRACES_EXPORTER: 'otlp' },
    ])
      expect(on(env)).toMatchObject({
        serviceName: 'baton-worker',
        exporters: ['otlp'],
        sampler: { name: 'parentbased_always_on', ratio: 1 },
        propagators: ['tracecontext', 'baggage'],
      });
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })?.otlpTracesUrl).toBe(
      'http://c:4318/v1/traces',
    );
    expect(
      on({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/x',
      })?.otlpTracesUrl,
    ).toBe('http://t/x');
    expect(on({ OTEL_TRACES_EXPORTER: 'console,otlp,console' })?.exporters).toEqual([
      'console',
      'otlp',
    ]);
  });

  it('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none win over an endpoint', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(on({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(on({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' })).toBeNull();
    expect(on({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(on({ ...endpoint, OTEL_SDK_DISABLED: 'false' })).not.toBeNull();
  });

  it('the service name: OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES, then the default', () => {
    const base = { OTEL_TRACES_EXPORTER: 'otlp' };
    expect(on(base)?.serviceName).toBe('baton-worker');
    expect(
      on({
        ...base,
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=my%20worker',
      })?.serviceName,
    ).toBe('my worker');
    expect(
      on({ ...base, OTEL_RESOURCE_ATTRIBUTES: 'service.name=a', OTEL_SERVICE_NAME: 'b' })
        ?.serviceName,
    ).toBe('b');
  });

  it('reads the sampler, its ratio, the propagators and the batch processor settings', () => {
    expect(
      on({
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_PROPAGATORS: 'tracecontext',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '64',
      }),
    ).toMatchObject({
      sampler: { name: 'parentbased_traceidratio', ratio: 0.25 },
      propagators: ['tracecontext'],
      batch: { scheduledDelayMillis: 200, maxExportBatchSize: 64 },
    });
  });

  it('refuses values it cannot honour with one line naming the variable and the fix', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER="zipkin".*otlp/],
      [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /http/],
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
        /OTEL_EXPORTER_OTLP_ENDPOINT.*not an http\(s\) URL/,
      ],
      [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER/],
      [
        {
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_TRACES_SAMPLER: 'traceidratio',
          OTEL_TRACES_SAMPLER_ARG: '2',
        },
        /OTEL_TRACES_SAMPLER_ARG="2".*0 to 1/,
      ],
      [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'b3' }, /OTEL_PROPAGATORS="b3"/],
      [
        { OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_SCHEDULE_DELAY: 'soon' },
        /OTEL_BSP_SCHEDULE_DELAY/,
      ],
    ];
    for (const [env, message] of cases) {
      expect(() => on(env)).toThrow(ConfigError);
      expect(() => on(env)).toThrow(message);
    }
  });
});
