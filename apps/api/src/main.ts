/**
 * API process entry: `node apps/api/src/main.ts`. Configuration comes from the environment
 * (see config.ts); workers run separately (`node apps/worker/src/main.ts`).
 */
import { startTracing, type TracingHandle } from '@baton/runtime';
import { exitOnSignals, safeUrl } from '@baton/runtime/internal';
import { protocolPlugins } from './adapters/plugins.ts';
import { loadApiConfig, type ApiConfig } from './config.ts';
import { createApiLogger } from './logger.ts';
import { startApi, type RunningApi } from './server.ts';
import { operatorMessage } from './startup.ts';

function exitWith(err: unknown, listen: { host: string; port: number }): never {
  const message = operatorMessage(err, listen);
  if (message === null) throw err;
  process.stderr.write(`baton-api: ${message}\n`);
  process.exit(1);
}

let config: ApiConfig;
try {
  config = loadApiConfig(process.env);
} catch (error) {
  exitWith(error, { host: process.env['HOST'] ?? '', port: Number(process.env['PORT']) });
}
// Tracing first (OTEL_* variables): the logger and the queues look once, when created.
let tracing: TracingHandle | null = null;
try {
  tracing = await startTracing({ serviceName: 'baton-api', env: process.env });
} catch (error) {
  process.stderr.write(`baton-api: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
const logger = createApiLogger(config.LOG_LEVEL);
let api: RunningApi;
try {
  // Front-end protocols (AI SDK UI message stream, AG-UI); the same set createApp defaults to.
  api = await startApi({ config, logger, plugins: protocolPlugins() });
} catch (error) {
  exitWith(error, { host: config.HOST, port: config.PORT });
}
const publicUrl = config.PUBLIC_URL ?? api.url;
logger.info(
  { url: publicUrl, redis: safeUrl(config.REDIS_URL), prefix: config.BATON_PREFIX },
  'api listening',
);
// Before the LISTENING line: a supervisor may signal as soon as it reads it (writing to its pipe
// wakes it, and it may run before this process goes on).
exitOnSignals(
  logger,
  async () => {
    try {
      await api.close();
    } finally {
      await tracing?.shutdown().catch(() => undefined);
    }
  },
  config.SHUTDOWN_GRACE_MS,
);
process.stdout.write(`LISTENING ${publicUrl}\n`);
