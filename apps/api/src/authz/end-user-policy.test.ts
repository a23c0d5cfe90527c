import { describe, expect, it } from 'vitest';
import { endUserBaseline, type EndUser } from './end-user-policy.ts';

const alice: EndUser = { subject: 'alice', scopes: ['runs:own', 'runs:start'] };
const t = 'acme';

describe('end users by default', () => {
  it('read and decide only the runs they own', () => {
    for (const op of ['getRun', 'streamRunEvents', 'submitDecisions']) {
      expect(endUserBaseline(alice, op, { tenantId: t, runId: 'r1', owner: 'alice' }, [])).toBe(
        'allow',
      );
      expect(endUserBaseline(alice, op, { tenantId: t, runId: 'r1', owner: 'bob' }, [])).toBe(
        'deny',
      );
      expect(endUserBaseline(alice, op, { tenantId: t, runId: 'r1' }, [])).toBe('deny');
    }
  });

  it('list only their own runs, and never cancel, delete or manage', () => {
    expect(endUserBaseline(alice, 'listRuns', { tenantId: t }, [])).toEqual({
      narrow: { owner: 'alice' },
    });
    for (const op of ['cancelRun', 'deleteRun', 'deleteThread', 'createSchedule', 'createApiKey'])
      expect(endUserBaseline(alice, op, { tenantId: t, runId: 'r1', owner: 'alice' }, ['*'])).toBe(
        'deny',
      );
  });

  it('start only the allowed agents, on a new thread or their own', () => {
    const start = (agent: string, extra: object = {}, allowed = ['assistant']) =>
      endUserBaseline(alice, 'createRun', { tenantId: t, agent, ...extra }, allowed);
    expect(start('assistant')).toBe('allow');
    expect(start('billing')).toBe('deny');
    expect(start('billing', {}, ['*'])).toBe('allow');
    expect(start('assistant', { threadId: 'th', threadExists: false })).toBe('allow');
    expect(start('assistant', { threadId: 'th', threadExists: true, owner: 'alice' })).toBe(
      'allow',
    );
    expect(start('assistant', { threadId: 'th', threadExists: true, owner: 'bob' })).toBe('deny');
    expect(start('assistant', { threadId: 'th', threadExists: true })).toBe('deny');
  });

  it('per-resource scopes name one run, thread or agent', () => {
    const user: EndUser = {
      scopes: ['run:read:r1', 'run:decide:r2', 'thread:read:th', 'agent:start:billing'],
    };
    expect(endUserBaseline(user, 'getRun', { tenantId: t, runId: 'r1' }, [])).toBe('allow');
    expect(endUserBaseline(user, 'submitDecisions', { tenantId: t, runId: 'r1' }, [])).toBe('deny');
    expect(endUserBaseline(user, 'submitDecisions', { tenantId: t, runId: 'r2' }, [])).toBe(
      'allow',
    );
    expect(endUserBaseline(user, 'getRun', { tenantId: t, runId: 'r3' }, [])).toBe('deny');
    expect(endUserBaseline(user, 'getThread', { tenantId: t, threadId: 'th' }, [])).toBe('allow');
    expect(endUserBaseline(user, 'listRuns', { tenantId: t }, [])).toBe('deny');
    expect(endUserBaseline(user, 'createRun', { tenantId: t, agent: 'billing' }, [])).toBe('allow');
    expect(endUserBaseline(user, 'createRun', { tenantId: t, agent: 'assistant' }, ['*'])).toBe(
      'deny',
    );
  });
});
