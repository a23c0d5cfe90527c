import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './packages/testing/src/slow-first-sequencer.ts';

/**
 * Four projects (docs/development.md, "Tests and scripts"):
 * - unit: source tests that need no Redis and start no process. No global set-up, so
 *   `npm run test:unit` runs on a machine without redis-server, in seconds.
 * - integration: test/ and the source tests that use Redis or processes, sharing one private
 *   Redis started by the global set-up. A new file in test/ lands here unless listed below.
 * - faults: the long chaos and kill-loop suites (workers killed or frozen again and again, 100
 *   API kills, a 20 s Redis outage, thousands of runs): 5 of the integration minutes on a 2-core
 *   machine, and the first to flake when it is loaded. `npm run test:faults` and CI run them;
 *   `npm test` does not. The short crash tests that guard exactly-once stay in integration:
 *   kill -9 of a worker mid-step under load (worker-scale), of a worker pool
 *   (agent-routing-kill), of Redis (durability, lost-writes), of a worker between schedule
 *   firings (schedules); fenced writes are tested against Redis itself (runtime fencing.test.ts).
 *
 * Files are classified here, never by moving them: other branches add files in parallel.
 */
const SRC_TESTS = ['packages/**/src/**/*.test.ts', 'apps/**/src/**/*.test.ts'];
const TYPE_TESTS = ['packages/**/src/**/*.test-d.ts', 'apps/**/src/**/*.test-d.ts'];
const EXCLUDE = ['**/node_modules/**', '**/dist/**', '**/coverage/**'];

const FAULT_TESTS = [
  'test/integration/client-reconnect.test.ts', // 100 kills of the serving API process
  'test/integration/worker-crash.test.ts', // kills at each point, and until MAX_STALLS deaths
  'test/integration/child-runs-crash.test.ts', // kills at each point of a child run's life
  'test/integration/worker-fencing.test.ts', // workers frozen (SIGSTOP) past their lease
  'test/integration/redis-outage.test.ts', // Redis away for 20 s
  'test/integration/reconciler-scale.test.ts', // 2,000 waiting runs
  'test/integration/events-scale.test.ts', // 1,000 runs waiting for events over 100 keys
  'test/integration/stall-accounting.test.ts', // frozen and killed workers until MAX_STALLS
  'test/integration/finished-runs.test.ts', // workers killed before recording a job
  'test/integration/archive-crash.test.ts', // archiver killed mid-batch, PostgreSQL restarted
  'test/integration/timers-volume.test.ts', // 1,000 deadlines under kill -9, 1,000 sleeps across restarts, 200 races
  'test/integration/fork-random.test.ts', // 1,000 random forks (FORK_TEST_COUNT)
  'test/integration/rolling-upgrade.test.ts', // N−1 and N side by side, kill -9 mid-upgrade
  'test/integration/agent-versions-scale.test.ts', // 500 runs over two agent versions (VERSIONS_RUNS)
];

/**
 * A source test that reads the run's Redis (`inject('redisUrl')`), uses the Redis or process
 * fixtures of @baton/testing (packages/testing/src), or starts a process belongs in integration. Read from the file so a
 * new one lands there by itself: in unit it would find no Redis URL, and ioredis would fall
 * back to 127.0.0.1:6379, the machine's shared Redis.
 */
const NEEDS_REDIS_OR_PROCESSES =
  /\binject\(|['"]node:child_process['"]|@baton\/testing\/(redis|postgres|process-stack|worker-process|api-process|api-harness|worker-harness|child-stack)|\.\/redis-(cluster|process)[\w-]*(\.ts)?['"]/;

/**
 * The cluster project: the end-to-end suites again, on one real Redis Cluster (3 masters + 3
 * replicas, packages/testing/src/global-setup-cluster.ts) instead of one Redis, plus the tests
 * that start clusters of their own (the fixture's, the failover). `npm run test:cluster`; CI runs
 * it after the faults. The suites run unchanged: their helpers build a cluster client from the
 * `redis+cluster://` URL, and the few that read the whole keyspace do it on every master.
 */
const CLUSTER_SUITES = [
  'test/integration/api-e2e.test.ts', // runs through the API
  'test/integration/worker-basic.test.ts', // runs on in-process workers
  'test/integration/tree-stream-reconnect.test.ts', // SSE reconnect over a run tree
  'test/integration/run-service-decisions.test.ts', // decisions
  'test/integration/worker-cancel.test.ts', // cancel
  'test/integration/api-cancel-races.test.ts', // cancel racing the run's own end
  'test/integration/worker-threads.test.ts', // threads
  'test/integration/child-runs.test.ts', // child runs
  'test/integration/schedules.test.ts', // schedules
  'test/integration/webhooks.test.ts', // webhooks
  'test/integration/protocol-ai-sdk.test.ts', // AI SDK route
  'test/integration/protocol-ag-ui.test.ts', // AG-UI route
  'test/integration/fairness.test.ts', // admission scripts on the tenants' {fair:<tenant>} slots
  'test/integration/api-managed-keys.test.ts', // managed keys: {apikeys} scripts, pub/sub invalidation
];
/** Tests that start their own Redis Cluster: too heavy for integration, run by the cluster project. */
const OWN_CLUSTER_TESTS = [
  'packages/testing/src/redis-cluster.test.ts',
  'test/cluster/cluster-failover.test.ts',
  'test/cluster/bench-cluster.test.ts', // npm run bench -- --scenario=cluster, tiny knobs
  'test/cluster/cluster-durability.test.ts', // strict durability: every master, a replica each
  'test/cluster/cluster-idle-cost.test.ts', // an idle worker's connections and commands
  'test/cluster/cluster-reply-pairing.test.ts', // every reply reaches its own command
  'test/cluster/cluster-failover-creates.test.ts', // issue 32: creates across a failover
];

/**
 * Integration files run side by side, each worker with a Redis of its own
 * (packages/testing/src/global-setup.ts). Their time is mostly waiting (processes starting,
 * timers, leases), so more workers than cores pay: on a 2-core machine `npm test` took ~830 s
 * with one worker, and 321–338 s with 4 in clean-clone CI runs (384 s at a load of 10–14).
 * BATON_TEST_WORKERS overrides it (1 to run the files one at a time, as before).
 */
const INTEGRATION_WORKERS = Number(process.env['BATON_TEST_WORKERS'] ?? 4);
/**
 * The fault suites kill and freeze processes against deadlines (leases, stall checks): two at a
 * time, so one's CPU does not starve another's timers on a 2-core machine (four of the files:
 * 80 s one at a time, 46 s two at a time).
 */
const FAULT_WORKERS = Number(process.env['BATON_FAULT_WORKERS'] ?? 2);

const ROOT = fileURLToPath(new URL('.', import.meta.url));
const srcTestsWithRedis = globSync(SRC_TESTS, {
  cwd: ROOT,
  exclude: (path) => path.includes('node_modules'),
})
  .filter((file) => NEEDS_REDIS_OR_PROCESSES.test(readFileSync(`${ROOT}/${file}`, 'utf8')))
  .sort();

export default defineConfig({
  test: {
    environment: 'node',
    // Child processes (redis-server, workers) are safer in forked workers than in threads.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    teardownTimeout: 10_000,
    // The longest integration files first (a clean clone has no timings cached): see the file.
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: SRC_TESTS,
          exclude: [...EXCLUDE, ...srcTestsWithRedis],
          // Files share a worker's module graph: re-importing zod, express and the AI SDK for
          // each of ~70 files was most of the unit run (80 s against 12 s on a loaded 2-core
          // machine). A unit test that changes process-wide state puts it back (tracing.test.ts).
          isolate: false,
          // Prints the Node version only (.ci/run checks it); starts no Redis.
          globalSetup: ['packages/testing/src/global-setup-unit.ts'],
          // Type tests (*.test-d.ts: expectTypeOf, @ts-expect-error) are checked by tsc, on
          // tsconfig.type-tests.json (those files and what they import, not the whole repository:
          // `npm run typecheck` does that); an assertion that does not hold, or an expected error
          // that no longer occurs, fails its test like any other.
          typecheck: {
            enabled: true,
            include: TYPE_TESTS,
            tsconfig: 'tsconfig.type-tests.json',
          },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts', ...srcTestsWithRedis],
          exclude: [...EXCLUDE, ...FAULT_TESTS, ...OWN_CLUSTER_TESTS],
          // One private Redis per worker; a file reads its worker's with inject('redisUrl').
          globalSetup: ['packages/testing/src/global-setup.ts'],
          setupFiles: ['packages/testing/src/worker-redis.ts'],
          maxWorkers: INTEGRATION_WORKERS,
          // Set-up hooks start API, worker and Redis processes: 1 s each on a quiet 2-core
          // machine, 20 s and more at a load of 20 with files running beside them.
          hookTimeout: 90_000,
          // After the unit files (one worker, one module graph): projects that run side by side
          // must share a worker count, and the unit run is short.
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'faults',
          include: FAULT_TESTS,
          exclude: EXCLUDE,
          globalSetup: ['packages/testing/src/global-setup.ts'],
          setupFiles: ['packages/testing/src/worker-redis.ts'],
          maxWorkers: FAULT_WORKERS,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: [...CLUSTER_SUITES, ...OWN_CLUSTER_TESTS],
          exclude: EXCLUDE,
          // One Redis Cluster per project run; tests read its URL with inject('redisUrl').
          globalSetup: ['packages/testing/src/global-setup-cluster.ts'],
          // A cluster client needs longer to settle (slot map, redirections) than one Redis.
          hookTimeout: 60_000,
        },
      },
    ],
    coverage: {
      provider: 'v8',
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
      // A failing run still prints the coverage summary (.ci/run shows it either way).
      reportOnFailure: true,
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
