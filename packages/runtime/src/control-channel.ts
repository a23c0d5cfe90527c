import type { BatonKeys } from './redis/keys.ts';
import type { RedisClient } from './redis/scripts.ts';

function controlChannel(keys: BatonKeys): string {
  return keys.control;
}

export type ControlMessage = { readonly type: 'cancel'; readonly runId: string };

export async function broadcastCancel(
  redis: RedisClient,
  keys: BatonKeys,
  runId: string,
): Promise<void> {
  const message: ControlMessage = { type: 'cancel', runId };
  await redis.publish(controlChannel(keys), JSON.stringify(message));
}

/**
 * In-flight work per run on this process (model streams, tool executions). A cancel broadcast
 * aborts all of it at once; the durable cancel flag makes the outcome stick even if the
 * broadcast is missed.
 */
export class AbortRegistry {
  private readonly controllers = new Map<string, Set<AbortController>>();

  track(runId: string): { signal: AbortSignal; done: () => void } {
    const controller = new AbortController();
    let set = this.controllers.get(runId);
    if (!set) {
      set = new Set();
      this.controllers.set(runId, set);
    }
    set.add(controller);
    return {
      signal: controller.signal,
      done: () => {
        set.delete(controller);
        if (set.size === 0) this.controllers.delete(runId);
      },
    };
  }

  abort(runId: string, reason = 'run cancelled'): number {
    const set = this.controllers.get(runId);
    if (!set) return 0;
    for (const c of set) c.abort(new Error(reason));
    return set.size;
  }

  abortAll(reason: string): void {
    for (const runId of [...this.controllers.keys()]) this.abort(runId, reason);
  }
}

/** Subscribes a dedicated connection to the control channel and applies messages. */
export async function listenForControl(
  subscriber: RedisClient,
  keys: BatonKeys,
  aborts: AbortRegistry,
  onError: (err: unknown) => void,
): Promise<void> {
  subscriber.on('message', (channel: string, raw: string) => {
    if (channel !== controlChannel(keys)) return;
    try {
      const message = JSON.parse(raw) as ControlMessage;
      if (message.type === 'cancel') aborts.abort(message.runId);
    } catch (err) {
      onError(err);
    }
  });
  await subscriber.subscribe(controlChannel(keys));
}
