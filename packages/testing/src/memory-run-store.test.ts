import { MemoryRunStore } from '@baton/core';
import { runStoreConformance } from './run-store-conformance.ts';

// MemoryRunStore has no read side beyond its event log: no last seq, tenant-scoped reads or
// delete (the in-process runner needs none), and it takes commits to a finished run, which
// RedisRunStore refuses (RunDoneError): the tests of those are reported as skipped here.
runStoreConformance({
  name: 'MemoryRunStore',
  open: (now) => new MemoryRunStore(now),
  readEvents: async (store, runId, afterSeq) => store.events(runId, afterSeq),
  refusesCommitsToFinishedRuns: false,
});
