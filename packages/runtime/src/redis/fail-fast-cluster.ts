import { Cluster } from 'ioredis';

/** After the cluster said it cannot serve, how long commands are refused without being sent. */
const CLUSTER_DOWN_WINDOW_MS = 500;

/** Errors that say the cluster as a whole cannot serve now (not one slow command). */
const CLUSTER_CANNOT_SERVE = [
  'CLUSTERDOWN',
  'TRYAGAIN',
  'Too many Cluster redirections',
  "Cluster isn't ready",
  'Failed to refresh slots cache',
  'None of startup nodes is available',
];

function cannotServe(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'ClusterAllFailedError') return true;
  return CLUSTER_CANNOT_SERVE.some((text) => error.message.includes(text));
}

/**
 * The API's cluster client: once a command found the cluster unable to serve (a failover under
 * way), the next ones fail at once for CLUSTER_DOWN_WINDOW_MS instead of each spending its own
 * redirections (up to ~350 ms) before failing. A request makes several commands in a row (the
 * rate limit, which falls back to memory, then the store): each paid that wait, and a 503 took
 * 0.7–1.1 s. The error names CLUSTERDOWN, so it is "Redis unavailable" (503) like the rest.
 * Pipelines (a run's checkpoint is read in one) go through here too.
 * Its own CLUSTER commands (the ready check) are always sent: they find out it is back.
 */
export class FailFastCluster extends Cluster {
  private downUntil = 0;

  override sendCommand(
    command: Parameters<Cluster['sendCommand']>[0],
    stream?: Parameters<Cluster['sendCommand']>[1],
    node?: unknown,
  ): unknown {
    if (command.name !== 'cluster' && Date.now() < this.downUntil) {
      command.reject(
        new Error(
          // Not "CLUSTERDOWN …" at the start: ioredis would retry a pipeline refused so.
          `Cluster unavailable (CLUSTERDOWN or redirections within the last ${String(CLUSTER_DOWN_WINDOW_MS)} ms); command not sent`,
        ),
      );
      return command.promise;
    }
    const sent = super.sendCommand(command, stream, node);
    command.promise.catch((error: unknown) => {
      if (cannotServe(error)) this.downUntil = Date.now() + CLUSTER_DOWN_WINDOW_MS;
    });
    return sent;
  }
}
