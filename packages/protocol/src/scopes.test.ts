import { describe, expect, it } from 'vitest';
import { MintTokenRequestSchema, oneUseByDefault, parseScope } from './scopes.ts';

describe('scopes', () => {
  it('parses each kind, ids with colons included', () => {
    expect(parseScope('run:read:r-1')).toEqual({ kind: 'run:read', runId: 'r-1' });
    expect(parseScope('run:decide:a:b')).toEqual({ kind: 'run:decide', runId: 'a:b' });
    expect(parseScope('thread:read:t1')).toEqual({ kind: 'thread:read', threadId: 't1' });
    expect(parseScope('thread:run:t1')).toEqual({ kind: 'thread:run', threadId: 't1' });
    expect(parseScope('agent:start:assistant')).toEqual({
      kind: 'agent:start',
      agent: 'assistant',
    });
    expect(parseScope('runs:own')).toEqual({ kind: 'runs:own' });
    expect(parseScope('runs:start')).toEqual({ kind: 'runs:start' });
  });

  it('refuses anything else', () => {
    for (const bad of ['run:read:', 'run:write:r1', 'runs:all', 'admin', 'run:read:a b', ''])
      expect(parseScope(bad)).toBeNull();
    const refused = MintTokenRequestSchema.safeParse({ scopes: ['run:delete:r1'] });
    expect(refused.success).toBe(false);
    expect(MintTokenRequestSchema.safeParse({ scopes: [] }).success).toBe(false);
  });

  it('agent:start tokens are one-use by default', () => {
    expect(oneUseByDefault(['agent:start:a'])).toBe(true);
    expect(oneUseByDefault(['run:read:r1', 'runs:own'])).toBe(false);
  });
});
