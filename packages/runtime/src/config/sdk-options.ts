import { z } from 'zod';
import { parseEnv } from './parse-env.ts';

/** `WORKER_CONCURRENCY` → `workerConcurrency`. */
type Camel<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Lowercase<Head>}${Capitalize<Camel<Tail>>}`
  : Lowercase<S>;

/**
 * The SDK option of a variable: its name in camelCase, without the `BATON_` every Baton-specific
 * variable carries (`BATON_TASK_QUEUE` → `taskQueue`, `LOG_LEVEL` → `logLevel`).
 */
type OptionName<Variable extends string> = Variable extends `BATON_${infer Rest}`
  ? Camel<Rest>
  : Camel<Variable>;

/** A parsed configuration's settings as optional SDK options (camelCase, typed values). */
export type SdkOptions<Config> = {
  readonly [Variable in keyof Config & string as OptionName<Variable>]?: Config[Variable];
};

/** The runtime twin of OptionName. */
export function optionName(variable: string): string {
  return variable
    .replace(/^BATON_/, '')
    .toLowerCase()
    .replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

let warned = false;

export interface CompileOptions {
  /** Who takes these options (named in a deprecation warning), e.g. `createWorker`. */
  readonly caller: string;
  /** Settings the caller's own arguments decide (e.g. `redis`, `prefix`), by variable name. */
  readonly fixed?: Readonly<Record<string, unknown>>;
}

/**
 * The SDK's options mapped onto the parsed configuration, in one place (as Temporal's
 * addDefaultWorkerOptions + compileWorkerOptions): camelCase options (and, deprecated for one
 * release, the variable names the SDK took before) are checked by the same schema as the
 * environment, so every default comes from the schema and a bad value throws the same
 * ConfigError, naming the option as the caller wrote it.
 */
export function compileSdkOptions<S extends z.ZodObject>(
  schema: S,
  options: Readonly<Record<string, unknown>>,
  compile: CompileOptions,
): z.infer<S> {
  const byOption = new Map(Object.keys(schema.shape).map((v) => [optionName(v), v]));
  const given = new Map<string, string>();
  const values: Record<string, string | undefined> = {};
  const set = (variable: string, name: string, value: unknown): void => {
    if (value === undefined) return;
    given.set(variable, name);
    // The schema parses environment strings: typed values are checked in that form.
    values[variable] = typeof value === 'string' ? value : JSON.stringify(value);
  };
  // Deprecated: the variables' own names, as the SDK took them before its camelCase options.
  const legacy = Object.keys(options).filter((name) => name in schema.shape);
  for (const name of legacy) set(name, name, options[name]);
  if (legacy.length > 0 && !warned) {
    warned = true; // once per process: a test suite or a bench would repeat it per worker
    const [name = ''] = legacy;
    process.emitWarning(
      `${compile.caller}: config options named after environment variables (${name}) are deprecated; use camelCase (${optionName(name)}), see docs/configuration.md`,
      { type: 'DeprecationWarning', code: 'BATON_CONFIG_VARIABLE_NAMES' },
    );
  }
  for (const [name, value] of Object.entries(options)) {
    const variable = byOption.get(name);
    if (variable !== undefined) set(variable, name, value);
  }
  for (const [variable, value] of Object.entries(compile.fixed ?? {}))
    set(variable, variable, value);
  return parseEnv(schema, values, {
    nameOf: (variable) => given.get(variable) ?? variable,
    fix: 'fix the option or leave it out to use its default (see docs/configuration.md)',
  });
}
