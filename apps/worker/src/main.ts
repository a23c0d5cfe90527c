/**
 * Worker process entry: `node apps/worker/src/main.ts`. Configuration comes from the environment
 * (see config.ts); BATON_AGENTS names what to run (default: demo): built-in sets (demo, matrix,
 * children), module paths (./agents.ts, ./agents.ts:name) and agents files (baton.agents.yaml);
 * BATON_AGENTS_FILE adds an agents file.
 */
import { loadAgentSources } from './agent-config/agent-sources.ts';
import type { LoadedAgents } from './agent-config/agents-file.ts';
import { loadWorkerConfig } from './config.ts';
import { createLogger, startTracing, systemClock, type TracingHandle } from '@baton/runtime';
import { exitOnSignals, safeUrl } from '@baton/runtime/internal';
import { BatonWorker } from './worker.ts';
import { probeFromEnv } from './testing/probe-hook.ts';

/** Start-up problems are the operator's to fix: one line that says what, no stack trace. */
function fatal(error: unknown): never {
  process.stderr.write(`baton-worker: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

let config: ReturnType<typeof loadWorkerConfig>;
try {
  config = loadWorkerConfig(process.env);
} catch (error) {
  fatal(error);
}
// Tracing first (OTEL_* variables): the logger, queues and workers look once, when created.
let tracing: TracingHandle | null;
try {
  tracing = await startTracing({ serviceName: 'baton-worker', env: process.env });
} catch (error) {
  fatal(error);
}
const logger = createLogger('baton-worker', config.LOG_LEVEL);
let loaded: LoadedAgents;
try {
  loaded = await loadAgentSources(systemClock, { env: process.env });
} catch (error) {
  fatal(error);
}
const { agents } = loaded;

const probe = probeFromEnv(process.env);
const worker = new BatonWorker({ config, agents, logger, ...(probe ? { probe } : {}) });
await worker.start().catch(async (error: unknown) => {
  await worker.stop(0).catch(() => undefined);
  await loaded.close().catch(() => undefined);
  fatal(error);
});
logger.info({ redis: safeUrl(config.REDIS_URL) }, 'ready');
// Before the READY line: a supervisor may signal as soon as it reads it. MCP connections close
// after the worker stopped: jobs still finishing may call their tools.
exitOnSignals(
  logger,
  async () => {
    try {
      await worker.stop();
    } finally {
      await loaded.close();
      await tracing?.shutdown().catch(() => undefined);
    }
  },
  config.SHUTDOWN_GRACE_MS,
);
process.stdout.write(`READY ${worker.id}\n`);
