import { CreateRunRequestSchema } from '@baton/protocol';
import { describe, expect, it } from 'vitest';
import { fairnessHeaders } from './run-stream.ts';

describe('Baton-Priority and Baton-Fairness-Key on the protocol routes', () => {
  const request = (options: object) => ({
    agent: 'a',
    input: { messages: [{ role: 'user', content: 'hi' }] },
    ...(Object.keys(options).length > 0 ? { options } : {}),
  });

  it('become the run options POST /v1/runs takes, validated as there', () => {
    const options = fairnessHeaders({ 'baton-priority': '1', 'baton-fairness-key': 'user-7' });
    expect(options).toEqual({ priority: 1, fairnessKey: 'user-7' });
    expect(CreateRunRequestSchema.parse(request(options)).options).toEqual(options);
    expect(fairnessHeaders({})).toEqual({});
    const bad = CreateRunRequestSchema.safeParse(
      request(fairnessHeaders({ 'baton-priority': 'x' })),
    );
    expect(bad.success).toBe(false);
    const badKey = CreateRunRequestSchema.safeParse(
      request(fairnessHeaders({ 'baton-fairness-key': 'a b' })),
    );
    expect(badKey.success).toBe(false);
  });
});
