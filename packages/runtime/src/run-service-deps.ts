import type { Clock, RunArchive } from '@baton/core';
import type { BatonQueues } from './queues.ts';
import type { BatonKeys } from './redis/keys.ts';
import type { RedisRunStore } from './redis/redis-run-store.ts';
import type { RedisClient } from './redis/scripts.ts';
import type { RedisThreadStore } from './redis/thread-store.ts';
import type { Durability } from './redis/durability.ts';
import type { RunEventSubscriber } from './redis/event-subscriber.ts';
import type { RunCommitter } from './run-committer.ts';
import type { WebhookOutbox } from './webhooks/webhook-outbox.ts';
import type { RunAdmission } from './fairness/run-admission.ts';
import type { RunReads } from './run-reads.ts';
import type { RunStarts } from './run-starts.ts';

export interface RunServiceDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly queues: BatonQueues;
  readonly committer: RunCommitter;
  readonly durability: Durability;
  readonly clock: Clock;
  readonly ids?: () => string;
  /** Fairness admission (docs/fairness.md); absent: every run is enqueued at once. */
  readonly admission?: RunAdmission;
  /** Webhooks of new runs (their own and their tenant's); none when absent. */
  readonly webhooks?: WebhookOutbox;
  /** ARCHIVE_URL's archive: reads fall through to it once Redis has let a run go. */
  readonly archive?: RunArchive;
  /** The live half of openEvents (BatonRuntime creates it on first use). */
  readonly subscriber?: () => RunEventSubscriber;
}

/** What RunService's parts (creation, deletion, decisions) share. */
export interface RunParts {
  readonly deps: RunServiceDeps;
  readonly ids: () => string;
  /** Every tenant-scoped read, Redis first and the archive on a miss. */
  readonly reads: RunReads;
  /** The one "admit or enqueue" rule. */
  readonly starts: RunStarts;
}
