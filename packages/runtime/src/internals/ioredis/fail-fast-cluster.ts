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
  /**
   * The decision taken for each pipeline (ioredis hands every command of one pipeline send the
   * same `stream`): a pipeline is refused whole or sent whole. ioredis queues each command of a
   * pipeline on its node's reply queue as it is handed over, and writes their bytes only once
   * the last one is: a pipeline refused from its middle on (the window ending or starting
   * between two of its commands) left commands queued for replies that would never come, and
   * every later reply on that connection went to the command before it (an acquire read a
   * WAIT's `1`, a checkpoint read an HGETALL of another key) until the connection closed.
   */
  private readonly pipelines = new WeakMap<object, boolean>();

  override sendCommand(
    command: Parameters<Cluster['sendCommand']>[0],
    stream?: Parameters<Cluster['sendCommand']>[1],
    node?: unknown,
  ): unknown {
    if (command.name !== 'cluster' && this.refuses(stream)) {
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

  private refuses(stream: object | undefined): boolean {
    if (stream === undefined) return Date.now() < this.downUntil;
    let refused = this.pipelines.get(stream);
    if (refused === undefined) {
      refused = Date.now() < this.downUntil;
      this.pipelines.set(stream, refused);
    }
    return refused;
  }
}
