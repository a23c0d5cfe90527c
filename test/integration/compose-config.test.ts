/**
 * docker-compose.yml cannot be started here (no Docker engine), so what it promises is checked as
 * text: Redis persists every write before answering, and both services insist on it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const compose = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');

function service(name: string): string {
  const start = compose.indexOf(`\n  ${name}:\n`);
  expect(start, `service ${name}`).toBeGreaterThan(-1);
  const rest = compose.slice(start + 1);
  const next = rest.slice(1).search(/\n {2}[a-z-]+:\n|\nvolumes:/);
  return next < 0 ? rest : rest.slice(0, next + 1);
}

describe('docker-compose.yml', () => {
  it('runs Redis with an AOF fsynced on every write and noeviction', () => {
    const redis = service('redis');
    expect(redis).toMatch(/'--appendonly',\s*'yes'/);
    expect(redis).toMatch(/'--appendfsync',\s*'always'/);
    expect(redis).toMatch(/'--maxmemory-policy',\s*'noeviction'/);
  });

  it('starts the API and the workers in strict durability mode', () => {
    for (const name of ['api', 'worker']) expect(service(name)).toMatch(/BATON_DURABILITY: strict/);
  });
});
