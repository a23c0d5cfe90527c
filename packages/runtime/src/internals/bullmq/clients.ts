import { coalesceWrites } from '../ioredis/write-coalescing.ts';

/*
 * The ioredis client behind a BullMQ Queue or Worker, as of bullmq 6.7 (package.json pins
 * ~6.7.0): `backend.client` resolves to it (a proxy that is still an instance of ioredis' Redis).
 * Needed to give BullMQ's own connections Baton's write coalescing: BullMQ has no hook for the
 * connections it opens. bullmq-contract.test.ts checks it.
 */

/** What coalesceBullWrites needs of a Queue or Worker. */
export interface WithBackendClient {
  readonly backend: { readonly client: Promise<unknown> };
}

/**
 * The ioredis client `target` sends its commands on (not its blocking connection): how a bench
 * finds that connection's socket under MONITOR, since BullMQ leaves it unnamed.
 */
export function bullClientOf(target: WithBackendClient): Promise<unknown> {
  return target.backend.client;
}

/**
 * Gives the connection `target` sends its commands on write coalescing (coalesceWrites): a job's
 * completion and the next fetch, and what several jobs send in one turn, go out in one write.
 */
export function coalesceBullWrites(target: WithBackendClient): void {
  bullClientOf(target).then(coalesceWrites, () => undefined);
}
