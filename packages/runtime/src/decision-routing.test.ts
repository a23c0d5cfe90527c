import type { Checkpoint } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { DecisionRouting } from './decision-routing.ts';
import type { RedisRunStore } from './run-record/redis-run-store.ts';

type Head = Omit<Checkpoint, 'messages'>;

/** The fields routing reads of a run: its calls, its round, its decision log, its parent. */
function head(
  runId: string,
  calls: Record<string, { status: string; child?: string }>,
  decisionIds: string[] = [],
): Head {
  return {
    identity: { runId },
    round: Object.keys(calls),
    calls: Object.fromEntries(
      Object.entries(calls).map(([id, c]) => [
        id,
        { id, status: c.status, ...(c.child ? { child: { runId: c.child } } : {}) },
      ]),
    ),
    decisionLog: decisionIds.map((decisionId) => ({
      decisionId,
      toolCallId: 'approve',
      action: 'resume',
    })),
  } as unknown as Head;
}

/** A store that knows only these heads (routing reads nothing else). */
function storeOf(heads: Head[]): RedisRunStore {
  const byId = new Map(heads.map((h) => [h.identity.runId, h]));
  return {
    loadHeadForTenant: (runId: string) => {
      const found = byId.get(runId);
      return Promise.resolve(found ? { checkpoint: found, version: 1 } : null);
    },
  } as unknown as RedisRunStore;
}

describe('DecisionRouting.route', () => {
  const root = head('parent', { delegate: { status: 'running', child: 'child' } });

  it('sends a resent decision to the child that recorded it, once its call is no longer suspended', async () => {
    const child = head('child', { approve: { status: 'completed' } }, ['d-1']);
    const routing = new DecisionRouting(storeOf([root, child]), 't', root);
    const groups = await routing.route([
      { toolCallId: 'approve', action: 'resume', decisionId: 'd-1' },
    ]);
    expect([...groups.keys()]).toEqual(['child']);
  });

  it('prefers a suspended call to a decision log that holds the same decisionId', async () => {
    const done = head('child', { approve: { status: 'completed' } }, ['d-1']);
    const waiting = head('other', { approve: { status: 'suspended' } });
    const two = head('parent', {
      first: { status: 'running', child: 'child' },
      second: { status: 'running', child: 'other' },
    });
    const routing = new DecisionRouting(storeOf([two, done, waiting]), 't', two);
    const groups = await routing.route([
      { toolCallId: 'approve', action: 'resume', decisionId: 'd-1' },
    ]);
    expect([...groups.keys()]).toEqual(['other']);
  });

  it('keeps a decision the run itself recorded, and an unknown one, with the run', async () => {
    const own = head('parent', { delegate: { status: 'running', child: 'child' } }, ['d-1']);
    const child = head('child', { approve: { status: 'completed' } }, ['d-1']);
    const routing = new DecisionRouting(storeOf([own, child]), 't', own);
    expect([
      ...(
        await routing.route([{ toolCallId: 'approve', action: 'resume', decisionId: 'd-1' }])
      ).keys(),
    ]).toEqual(['parent']);
    expect([
      ...(
        await routing.route([{ toolCallId: 'nope', action: 'resume', decisionId: 'd-9' }])
      ).keys(),
    ]).toEqual(['parent']);
  });
});
