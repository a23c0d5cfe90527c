import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { uniquePrefix } from '@baton/testing/redis';
import { AgentCatalog, agentsKey } from './agent-registry.ts';
import { BatonKeys } from './redis/keys.ts';

const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });

afterAll(async () => {
  await redis.quit();
});

function advertText(description: string): string {
  return JSON.stringify({
    name: 'alpha',
    description,
    executionMode: 'sequential',
    stopConditions: [],
    stateKeys: [],
    tools: [],
    workers: ['w1'],
    updatedAt: 1,
  });
}

describe('AgentCatalog.advert', () => {
  it('parses an advert once per stored text, again when a worker advertises anew', async () => {
    const keys = new BatonKeys(uniquePrefix('catalog'));
    const catalog = new AgentCatalog(redis, keys);
    expect(await catalog.advert('alpha')).toBeNull();
    await redis.hset(agentsKey(keys), 'alpha', advertText('one'));
    const first = await catalog.advert('alpha');
    expect(first).toMatchObject({ name: 'alpha', description: 'one' });
    expect(await catalog.advert('alpha')).toBe(first);
    await redis.hset(agentsKey(keys), 'alpha', advertText('two'));
    expect(await catalog.advert('alpha')).toMatchObject({ description: 'two' });
    await redis.hset(agentsKey(keys), 'alpha', 'not an advert');
    expect(await catalog.advert('alpha')).toBeNull();
    await redis.hdel(agentsKey(keys), 'alpha');
    expect(await catalog.advert('alpha')).toBeNull();
  });
});
