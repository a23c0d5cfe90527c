import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (path: string): string => readFileSync(new URL(path, import.meta.url), 'utf8');

describe('what baton init and npm start tell a user', () => {
  it('name the Redis Baton accepts: 7 or later (it refuses older ones at start)', () => {
    for (const text of [read('../template/env.example'), read('../../../scripts/start.ts')]) {
      expect(text).toContain('Redis 7+');
      expect(text).not.toMatch(/Redis [2-6]\.\d/);
    }
  });

  it("the project's tsconfig checks its TypeScript with Node's types (npm run typecheck)", () => {
    const tsconfig = JSON.parse(read('../template/tsconfig.json')) as {
      compilerOptions: Record<string, unknown>;
      include: string[];
    };
    expect(tsconfig.compilerOptions['noEmit']).toBe(true);
    expect(tsconfig.compilerOptions['types']).toEqual(['node']);
    expect(tsconfig.include).toEqual(['**/*.ts']);
    expect(read('../template/README.md')).toMatch(/npm run\s+typecheck/);
  });
});
