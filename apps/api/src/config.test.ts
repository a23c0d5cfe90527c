import { describe, expect, it } from 'vitest';
import { ConfigError } from '@baton/runtime';
import { ENV_KEYS } from '@baton/runtime/internal';
import { ApiConfigSchema, apiConfig, loadApiConfig } from './config.ts';

describe('API configuration', () => {
  it('reads only variables of the one list', () => {
    const listed = new Set<string>([...ENV_KEYS.runtime, ...ENV_KEYS.api]);
    for (const name of Object.keys(ApiConfigSchema.shape)) expect(listed).toContain(name);
  });

  it('an invalid variable names it, its value and what it accepts', () => {
    expect(() => loadApiConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadApiConfig({ PORT: 'eighty' })).toThrow(
      /^invalid configuration: PORT="eighty": .*\(accepts a whole number from 0 to 65535 \(default 3000\)\)/,
    );
  });

  it('never echoes a key', () => {
    expect(() => loadApiConfig({ METRICS_KEY: 'short-secret' })).toThrow(/METRICS_KEY: /);
    expect(() => loadApiConfig({ METRICS_KEY: 'short-secret' })).not.toThrow(/short-secret/);
  });

  it('in code: camelCase options map onto the same configuration as the environment', () => {
    expect(
      apiConfig({
        port: 0,
        apiKeys: 'tenant-a:tenant-a-secret-key',
        prefix: 'p',
        metricsPublic: true,
      }),
    ).toEqual(
      loadApiConfig({
        PORT: '0',
        API_KEYS: 'tenant-a:tenant-a-secret-key',
        BATON_PREFIX: 'p',
        METRICS_PUBLIC: 'true',
      }),
    );
    expect(() => apiConfig({ sseHeartbeatMs: 1 })).toThrow(
      /^invalid configuration: sseHeartbeatMs="1": .*accepts a whole number of at least 50/,
    );
  });
});
