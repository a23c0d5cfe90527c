/**
 * API process entry: `node apps/api/src/main.ts`. Configuration comes from the environment
 * (see config.ts); workers run separately (`node apps/worker/src/main.ts`).
 */
import { exitOnSignals, safeUrl } from '@baton/worker';
import { protocolPlugins } from './adapters/plugins.ts';
import { loadApiConfig } from './config.ts';
import { createApiLogger } from './logger.ts';
import { startApi } from './server.ts';

const config = loadApiConfig();
const logger = createApiLogger(config.LOG_LEVEL);
// Front-end protocols (AI SDK UI message stream, AG-UI); the same set createApp defaults to.
const api = await startApi({ config, logger, plugins: protocolPlugins() });
const publicUrl = config.PUBLIC_URL ?? api.url;
logger.info(
  { url: publicUrl, redis: safeUrl(config.REDIS_URL), prefix: config.BATON_PREFIX },
  'api listening',
);
process.stdout.write(`LISTENING ${publicUrl}\n`);

exitOnSignals(logger, () => api.close());
