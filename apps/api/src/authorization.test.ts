import { describe, expect, it } from 'vitest';
import type { Principal } from './auth.ts';
import { authorize, type Operation, type Resource } from './authorization.ts';

function token(scopes: string[], subject?: string): Principal {
  return {
    tenantId: 't',
    admin: false,
    scopes,
    ...(subject !== undefined ? { subject } : {}),
    credential: { kind: 'baton-token', id: 'j' },
  };
}

const run: Resource = { runId: 'r1', threadId: 'th1', agent: 'assistant', owner: 'alice' };

function answer(p: Principal, op: Operation, resource: Resource = run): number {
  const result = authorize(p, op, resource);
  return result.allowed ? 200 : result.status;
}

describe('authorize', () => {
  it('lets a tenant key do everything', () => {
    const key: Principal = {
      tenantId: 't',
      admin: false,
      scopes: null,
      credential: { kind: 'api-key' },
    };
    for (const op of ['run.read', 'run.decide', 'run.delete', 'runs.list', 'tenant'] as const)
      expect(answer(key, op)).toBe(200);
  });

  it('a run token reads and decides its run; another run is a 404; deleting a 403', () => {
    const p = token(['run:read:r1', 'run:decide:r1']);
    expect(answer(p, 'run.read')).toBe(200);
    expect(answer(p, 'run.decide')).toBe(200);
    expect(answer(p, 'run.cancel')).toBe(200);
    expect(answer(p, 'run.delete')).toBe(403);
    expect(answer(p, 'run.read', { ...run, runId: 'r2', threadId: 'th2' })).toBe(404);
    expect(answer(p, 'run.decide', { ...run, runId: 'r2', threadId: 'th2' })).toBe(404);
    expect(answer(p, 'tenant')).toBe(403);
    expect(answer(p, 'runs.list')).toBe(403);
  });

  it('read only: deciding is a 403, not a 404', () => {
    const p = token(['run:read:r1']);
    expect(answer(p, 'run.read')).toBe(200);
    expect(answer(p, 'run.decide')).toBe(403);
  });

  it('thread scopes cover the runs on the thread; thread:run starts the next turn', () => {
    const read = token(['thread:read:th1']);
    expect(answer(read, 'run.read')).toBe(200);
    expect(answer(read, 'run.decide')).toBe(403);
    expect(answer(read, 'thread.read', { threadId: 'th1' })).toBe(200);
    expect(answer(read, 'run.create', { agent: 'x', threadId: 'th1' })).toBe(403);
    expect(answer(read, 'thread.read', { threadId: 'th9' })).toBe(404);
    const chat = token(['thread:run:th1']);
    expect(answer(chat, 'run.decide')).toBe(200);
    expect(answer(chat, 'run.create', { agent: 'x', threadId: 'th1' })).toBe(200);
    expect(answer(chat, 'run.create', { agent: 'x', threadId: 'th2' })).toBe(403);
    expect(answer(chat, 'run.create', { agent: 'x' })).toBe(403);
  });

  it('agent:start names the agent; runs:start any agent, on a new or own thread', () => {
    const one = token(['agent:start:assistant']);
    expect(answer(one, 'run.create', { agent: 'assistant' })).toBe(200);
    expect(answer(one, 'run.create', { agent: 'other' })).toBe(403);
    const any = token(['runs:start'], 'alice');
    expect(answer(any, 'run.create', { agent: 'other' })).toBe(200);
    expect(answer(any, 'run.create', { agent: 'other', threadId: 'th1', owner: 'alice' })).toBe(
      200,
    );
    expect(answer(any, 'run.create', { agent: 'other', threadId: 'th1', owner: 'bob' })).toBe(403);
    expect(answer(any, 'run.create', { agent: 'other', threadId: 'new', freshThread: true })).toBe(
      200,
    );
  });

  it('runs:own: the subject reads, decides and lists its own runs only', () => {
    const alice = token(['runs:own'], 'alice');
    expect(answer(alice, 'run.read')).toBe(200);
    expect(answer(alice, 'run.decide')).toBe(200);
    expect(answer(alice, 'runs.list')).toBe(200);
    const bob = token(['runs:own'], 'bob');
    expect(answer(bob, 'run.read')).toBe(404);
    expect(answer(bob, 'run.decide')).toBe(404);
    // no subject, no own runs
    expect(answer(token(['runs:own']), 'run.read')).toBe(404);
    expect(answer(token(['runs:own']), 'runs.list')).toBe(403);
  });

  it('a route for tenant keys is 404 for a run the token cannot see, 403 for one it can', () => {
    expect(answer(token(['run:read:r1']), 'tenant')).toBe(403);
    expect(answer(token(['run:read:r2']), 'tenant')).toBe(404);
    expect(answer(token(['run:read:r2']), 'tenant', {})).toBe(403);
  });

  it('runs:start is bounded by the allowed agents (an identity provider names them)', () => {
    const any = token(['runs:start'], 'alice');
    const start = (allowed: string[]) =>
      authorize(any, 'run.create', { agent: 'billing' }, allowed).allowed;
    expect(start(['*'])).toBe(true);
    expect(start(['billing'])).toBe(true);
    expect(start(['assistant'])).toBe(false);
    expect(start([])).toBe(false);
  });

  it('a run without an owner is nobody’s own run', () => {
    const alice = token(['runs:own'], 'alice');
    const { owner: _owner, ...unowned } = run;
    expect(answer(alice, 'run.read', unowned)).toBe(404);
  });
});
