import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/**/src/**/*.test.ts', 'apps/**/src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', '**/coverage/**'],
    environment: 'node',
    // One private Redis for the whole run; tests read it with inject('redisUrl').
    globalSetup: ['test/support/global-setup.ts'],
    // Child processes (redis-server, workers) are safer in forked workers than in threads.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    teardownTimeout: 10_000,
    coverage: {
      provider: 'v8',
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
      include: ['packages/core/src/**/*.ts'],
      exclude: [
        'packages/core/src/**/*.test.ts',
        'packages/core/src/**/*.bench.ts',
        'packages/core/src/**/*.d.ts',
        'packages/core/src/**/__fixtures__/**',
      ],
      // Coverage is measured on packages/core only, so this is core's gate.
      thresholds: {
        lines: 90,
      },
    },
  },
});
