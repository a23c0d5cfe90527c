import { MAX_CHILD_DEPTH } from '@baton/protocol';
import type { RedisRunStore } from '../run-record/redis-run-store.ts';

/**
 * Whether a run of `tenantId` waits on a descendant (agent-as-tool) that waits for a human: the
 * state in which its tree holds no fairness slot (RunAdmission.waitingForHuman). Read from the
 * runs themselves, so the sweep can give back a slot whose release a crash lost between the
 * child's waiting commit and the release (a run looks active while its child waits). Reads the
 * running children of each level's current round, at most MAX_CHILD_DEPTH levels deep.
 */
export async function treeWaitsOnHuman(
  store: Pick<RedisRunStore, 'loadHeadForTenant' | 'meta'>,
  tenantId: string,
  runId: string,
): Promise<boolean> {
  let level = [runId];
  for (let depth = 0; depth < MAX_CHILD_DEPTH && level.length > 0; depth += 1) {
    const next: string[] = [];
    for (const id of level) {
      const head = (await store.loadHeadForTenant(id, tenantId))?.checkpoint;
      if (!head) continue;
      for (const callId of head.round) {
        const call = head.calls[callId];
        if (call?.status !== 'running' || !call.child) continue;
        const child = await store.meta(call.child.runId);
        if (!child || child.tenantId !== tenantId) continue;
        if (child.activity === 'waiting') return true;
        if (child.activity === 'active') next.push(call.child.runId);
      }
    }
    level = next;
  }
  return false;
}
