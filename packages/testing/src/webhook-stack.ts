/**
 * Test fixture: in-process workers running the demo and child-run agents, one in-process API
 * with one tenant key, and a webhook receiver on loopback that both are allowed to use (the API
 * accepts its URL, deliveries may reach it). For tests of what people see: the console, the CLI.
 */
import { loadApiConfig, startApi, type RunningApi } from '@baton/api';
import { childAgents, createDemoAgents } from '@baton/core/testing';
import { systemClock } from '@baton/runtime';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';
import { silentLogger, startHarness, type Harness } from './worker-harness.ts';

export interface WebhookStack {
  readonly h: Harness;
  readonly api: RunningApi;
  readonly url: string;
  readonly key: string;
  /** Answers 204 to every webhook. */
  readonly rx: WebhookReceiver;
  stop(): Promise<void>;
}

export async function startWebhookStack(redisUrl: string, key: string): Promise<WebhookStack> {
  const rx = await startWebhookReceiver(() => 204);
  const h = await startHarness(redisUrl, [...createDemoAgents(systemClock), ...childAgents()], {
    overrides: { BATON_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
  });
  const config = loadApiConfig({
    REDIS_URL: redisUrl,
    BATON_PREFIX: h.prefix,
    API_KEYS: `people:${key}`,
    LOG_LEVEL: 'silent',
    SSE_HEARTBEAT_MS: '250',
    BATON_WEBHOOK_ALLOW_PRIVATE: '1',
  });
  const api = await startApi({ config, port: 0, host: '127.0.0.1', logger: silentLogger });
  return {
    h,
    api,
    url: api.url,
    key,
    rx,
    stop: async () => {
      await api.close();
      await h.stop();
      await rx.close();
    },
  };
}
