import { Redis } from 'ioredis';
import { afterAll, inject } from 'vitest';
import { runStoreConformance } from '@baton/testing/run-store-conformance';
import { uniquePrefix } from '@baton/testing/redis';
import { RedisRunStore } from './redis-run-store.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });

afterAll(async () => {
  await redis.quit();
});

runStoreConformance({
  name: 'RedisRunStore',
  // A prefix per test: no test reads another's keys.
  open: (now) => new RedisRunStore({ redis, prefix: uniquePrefix('conformance'), now }),
  readEvents: (store, runId, afterSeq) => store.readEvents(runId, afterSeq),
  lastSeq: (store, runId) => store.lastSeq(runId),
  commitOnBase: (store, runId, expectedVersion, checkpoint, events, base) =>
    store.commit(runId, expectedVersion, checkpoint, events, null, { base }),
  tenantReads: {
    load: (store, runId, tenantId) => store.loadForTenant(runId, tenantId),
    lastSeq: (store, runId, tenantId) => store.lastSeqForTenant(runId, tenantId),
  },
  deleteRun: (store, runId, tenantId) => store.deleteRun(runId, tenantId),
  guards: {
    finishedRunsTakeNoCommit: true,
    checkpointMustNameTheRun: true,
    eventsReadAreCopies: true,
  },
});
