/**
 * Vitest globalSetup of the unit project: no Redis, only the line naming the Node the tests run
 * on (npm scripts use the project's own Node 24 whatever the system has; .ci/run checks it).
 */
export default function setup(): void {
  console.info(`[baton tests] node ${process.version} (${process.execPath})`);
}
