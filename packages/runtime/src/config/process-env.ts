import type { Env } from './parse-env.ts';

/**
 * The process's environment, for the public functions whose documented default is "read the
 * environment" (startTracing, createLogger, an agents file's provider keys). Besides the process
 * entry points this is the only place production code reaches `process.env`, so a grep finds
 * every read.
 */
export function processEnv(): Env {
  return process.env;
}
