// @ts-check
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

// packages/core is the pure, deterministic heart of Baton: no I/O, no ambient time.
// Everything effectful reaches it through ports (Clock, Store, ModelAdapter, ...).
const nodeBuiltins = [...new Set(builtinModules.filter((m) => !m.startsWith('_')))];
const ioPackages = [
  'ioredis',
  'bullmq',
  'redis',
  'express',
  'pino',
  'pino-http',
  'undici',
  'node-fetch',
  'axios',
  'ky',
  'got',
  'cross-fetch',
];
const CORE_IO_MESSAGE =
  'packages/core must stay free of I/O: inject it through a port (see core ports) instead of importing it.';
const EXPORT_LIST_MESSAGE =
  '@baton/core and @baton/protocol list their exports by name (export { a, type B }), so knip can tell a public name from a dead one.';
const CORE_TIME_MESSAGE =
  'packages/core gets time from the injected Clock port, not ambient timers.';
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// esquery regex literals cannot contain '/', so spell it \x2F.
const bannedSpecifierRegExp = `^(node:|(${[...nodeBuiltins, ...ioPackages]
  .map(escapeRegExp)
  .join('|')})(\\x2F|$))`.replaceAll('/', '\\x2F');

// apps/api has one door into run data: RunService (and ScheduleService), whose reads and writes
// are tenant-scoped. Routes and adapters import no store of the runtime, and never reach around
// the services through the runtime; app.ts builds the app's context from the runtime (and
// health.ts and metrics.ts name its type: they read no run data).
const API_STORES = [
  'BatonRuntime',
  'RedisRunStore',
  'RedisThreadStore',
  'RedisScheduleStore',
  'WebhookStore',
  'WebhookOutbox',
  'RunLeases',
  'RunCommitter',
  'ChildRuns',
];
const API_DOOR_MESSAGE =
  'apps/api reaches run data through RunService / ScheduleService (ctx.service, ctx.schedules), which scope every read to the tenant; add a method there instead of using a store.';
const API_DOOR_IMPORTS = [
  { name: '@baton/runtime', importNames: API_STORES, message: API_DOOR_MESSAGE },
  { name: 'ioredis', message: API_DOOR_MESSAGE },
];
const API_DOOR_PATTERNS = [
  { group: ['@baton/runtime/*'], importNames: API_STORES, message: API_DOOR_MESSAGE },
];
const API_DOOR_SYNTAX = {
  selector: "MemberExpression[property.name='runtime']",
  message: API_DOOR_MESSAGE,
};

// Library internals (BullMQ's key layout and backend, ioredis' connections and commands, express's
// router, pino's symbols, prom-client's collectors) are used only through the named functions of
// one folder per library: packages/runtime/src/internals/{bullmq,ioredis}/ and
// apps/api/src/internals/{express,pino,prom-client}/, each with a contract test that fails when an
// upgrade changes what it relies on (docs/ARCHITECTURE.md, "Library internals").
const INTERNALS_MESSAGE =
  "a library's internals are used only inside its folder (packages/runtime/src/internals/<library>/, apps/api/src/internals/<library>/): call or add a named function there, with its contract test.";
const INTERNALS_IMPORTS = [
  {
    name: 'bullmq',
    importNames: ['QueueKeys', 'RedisConnection', 'RedisQueueBackend', 'createRedisBackend'],
    message: INTERNALS_MESSAGE,
  },
  { name: 'ioredis', importNames: ['AbstractConnector', 'Command'], message: INTERNALS_MESSAGE },
];
const INTERNALS_SYNTAX = [
  // Subclasses of a library's classes override its undocumented methods.
  ...['ClassDeclaration', 'ClassExpression'].map((node) => ({
    selector: `${node}[superClass.name=/^(Redis|Cluster|AbstractConnector|RedisQueueBackend)$/]`,
    message: INTERNALS_MESSAGE,
  })),
  // BullMQ's key layout: a queue's keys, a job's hash and its lock.
  { selector: "CallExpression[callee.property.name='toKey']", message: INTERNALS_MESSAGE },
  { selector: "TemplateElement[value.raw=':lock']", message: INTERNALS_MESSAGE },
  // The ioredis client behind a BullMQ queue or worker.
  {
    selector: "MemberExpression[property.name='client'][object.property.name='backend']",
    message: INTERNALS_MESSAGE,
  },
  // A library's socket or method patched in place.
  {
    selector:
      "AssignmentExpression > MemberExpression.left[property.name='write']:not([object.type='ThisExpression'])",
    message: INTERNALS_MESSAGE,
  },
  {
    selector: "MemberExpression[object.name='pino'][property.name='symbols']",
    message: INTERNALS_MESSAGE,
  },
  { selector: "CallExpression[callee.property.name='registerMetric']", message: INTERNALS_MESSAGE },
  {
    selector: "MemberExpression[property.name='stack'][object.property.name='router']",
    message: INTERNALS_MESSAGE,
  },
  // A cast through unknown is how code reaches what a library's types do not show.
  {
    selector:
      "TSAsExpression[expression.type='TSAsExpression'][expression.typeAnnotation.type='TSUnknownKeyword']",
    message: INTERNALS_MESSAGE,
  },
];

// A run's keys (`p:{run:<id>}:…`, hash-tagged so one script may touch them all) have one owner:
// packages/runtime/src/run-record/ (its README lists every key and field). Everywhere else asks
// it by name (RedisRunStore and its reads, RunBookkeeping, RunLeases, ToolResultMailbox,
// WebhookStore) instead of building a run key or sending a command to one. keys.ts (the layout)
// is the one other file that spells them. Production code only: tests inspect the record.
const RUN_KEY_MESSAGE =
  "a run's keys belong to packages/runtime/src/run-record/: add a named method there (see its README) instead of building or touching a run key here.";
const RUN_KEY_SELECTORS = [
  // BatonKeys.run(id) / .webhook(id): keys.run(…), this.keys.run(…), deps.keys.run(…)
  "CallExpression[callee.type='MemberExpression'][callee.property.name=/^(run|webhook)$/][callee.object.name='keys']",
  "CallExpression[callee.type='MemberExpression'][callee.property.name=/^(run|webhook)$/][callee.object.property.name='keys']",
  // the helpers that hand out a run's keys, and their type
  'Identifier[name=/^(runKeys|runDataKeys)$/]',
  'TSTypeReference[typeName.name=/^(RunKeys|RunDataKeys)$/]',
  // a run's hash tag spelled out
  'Literal[value=/\\{run:/]',
  'TemplateElement[value.raw=/\\{run:/]',
].map((selector) => ({ selector, message: RUN_KEY_MESSAGE }));
const PRODUCTION_SOURCES = [
  'apps/*/src/**/*.{ts,mts,cts,tsx}',
  'packages/runtime/src/**/*.{ts,mts,cts}',
  'packages/cli/src/**/*.{ts,mts,cts}',
  'packages/client/src/**/*.{ts,mts,cts}',
];
const NOT_PRODUCTION = ['**/*.test.ts', '**/*.test-d.ts', '**/*.bench.ts', 'apps/*/src/testing/**'];

export default defineConfig(
  globalIgnores(['**/node_modules/', '**/coverage/', '**/dist/', '**/.cache/']),

  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [js.configs.recommended],
    languageOptions: {
      sourceType: 'module',
      ecmaVersion: 'latest',
    },
  },

  {
    files: ['**/*.{ts,mts,cts,tsx}'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      // Async implementations of Promise-returning ports often have nothing to await.
      '@typescript-eslint/require-await': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'off',
    },
  },

  {
    // Test files may use loose typing around mocks and expect().
    files: ['**/*.test.ts', 'test/**/*.ts', 'packages/testing/src/**/*.ts'],
    rules: {
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },

  {
    // No I/O imports anywhere in core (tests included: core tests are pure and fast).
    files: ['packages/core/**/*.{ts,mts,cts,js}'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: CORE_IO_MESSAGE },
            {
              group: [...nodeBuiltins, ...nodeBuiltins.map((m) => `${m}/*`)],
              message: CORE_IO_MESSAGE,
            },
            {
              group: [...ioPackages, ...ioPackages.map((m) => `${m}/*`)],
              message: CORE_IO_MESSAGE,
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: `ImportExpression[source.value=/${bannedSpecifierRegExp}/]`,
          message: CORE_IO_MESSAGE,
        },
        { selector: 'ExportAllDeclaration', message: EXPORT_LIST_MESSAGE },
      ],
    },
  },

  {
    files: ['packages/protocol/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportAllDeclaration', message: EXPORT_LIST_MESSAGE },
      ],
    },
  },

  {
    // Production code outside the internals folders and the run record: neither library
    // internals nor a run's keys (apps/api's door block below adds the same; in flat config a
    // later block's rule replaces an earlier one for the files both match, so each block lists
    // every selector its files need).
    files: [
      ...PRODUCTION_SOURCES,
      'apps/api/src/app.ts',
      'apps/api/src/health.ts',
      'apps/api/src/metrics.ts',
    ],
    ignores: [
      ...NOT_PRODUCTION,
      '**/internals/**',
      'packages/runtime/src/run-record/**',
      'packages/runtime/src/redis/keys.ts',
    ],
    rules: {
      'no-restricted-imports': ['error', { paths: INTERNALS_IMPORTS }],
      'no-restricted-syntax': ['error', ...INTERNALS_SYNTAX, ...RUN_KEY_SELECTORS],
    },
  },

  {
    // The benches reach library internals through the same named functions (an upgrade then
    // fails the contract test, not a bench's numbers). Their floor models spell run keys of their
    // own, so the run-key ban does not apply.
    files: ['bench/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: INTERNALS_IMPORTS }],
      'no-restricted-syntax': ['error', ...INTERNALS_SYNTAX],
    },
  },

  {
    // The run record (and the key layout) spell a run's keys; library internals stay banned.
    files: ['packages/runtime/src/run-record/**/*.ts', 'packages/runtime/src/redis/keys.ts'],
    ignores: NOT_PRODUCTION,
    rules: {
      'no-restricted-imports': ['error', { paths: INTERNALS_IMPORTS }],
      'no-restricted-syntax': ['error', ...INTERNALS_SYNTAX],
    },
  },

  {
    // The runtime's internals folders use their library's internals; a run's keys stay banned.
    files: ['packages/runtime/src/internals/**/*.ts'],
    ignores: NOT_PRODUCTION,
    rules: { 'no-restricted-syntax': ['error', ...RUN_KEY_SELECTORS] },
  },

  {
    files: ['apps/api/src/**/*.ts'],
    ignores: [
      'apps/api/src/app.ts',
      'apps/api/src/health.ts',
      'apps/api/src/metrics.ts',
      'apps/api/src/internals/**',
      '**/*.test.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...API_DOOR_IMPORTS, ...INTERNALS_IMPORTS],
          patterns: API_DOOR_PATTERNS,
        },
      ],
      'no-restricted-syntax': ['error', API_DOOR_SYNTAX, ...INTERNALS_SYNTAX, ...RUN_KEY_SELECTORS],
    },
  },

  {
    // The API's internals folders: the door rules and the run-key ban, not the internals ban.
    files: ['apps/api/src/internals/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: API_DOOR_IMPORTS, patterns: API_DOOR_PATTERNS }],
      'no-restricted-syntax': ['error', API_DOOR_SYNTAX, ...RUN_KEY_SELECTORS],
    },
  },

  {
    // No ambient effects in core production code.
    files: ['packages/core/**/*.{ts,mts,cts,js}'],
    ignores: ['**/*.test.ts', '**/*.bench.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        { name: 'fetch', message: CORE_IO_MESSAGE },
        { name: 'process', message: 'packages/core must not read process state; pass config in.' },
        { name: 'require', message: CORE_IO_MESSAGE },
        { name: 'setTimeout', message: CORE_TIME_MESSAGE },
        { name: 'setInterval', message: CORE_TIME_MESSAGE },
        { name: 'setImmediate', message: CORE_TIME_MESSAGE },
        { name: 'performance', message: CORE_TIME_MESSAGE },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'globalThis', property: 'fetch', message: CORE_IO_MESSAGE },
        { object: 'globalThis', property: 'process', message: CORE_IO_MESSAGE },
        { object: 'globalThis', property: 'setTimeout', message: CORE_TIME_MESSAGE },
        { object: 'globalThis', property: 'setInterval', message: CORE_TIME_MESSAGE },
        { object: 'Date', property: 'now', message: CORE_TIME_MESSAGE },
      ],
    },
  },
);
