import type { z } from 'zod';
import { ConfigError } from '../errors/config-error.ts';

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Names whose values may hold secrets (keys, tokens, passwords in a URL's user info): an error
 * names the variable but never echoes its value.
 */
const SECRET_VARIABLES = /KEY|SECRET|PASSWORD|TOKEN|_URL$|WEBHOOKS|HEADERS/;

function isSecretVariable(name: string): boolean {
  return SECRET_VARIABLES.test(name);
}

export interface ParseEnvOptions {
  /**
   * The name a setting is shown under (default: the variable's): the SDK shows its camelCase
   * option names, so the message names what the caller wrote.
   */
  readonly nameOf?: (variable: string) => string;
  /** The message's tail: how to fix it (default: the environment's). */
  readonly fix?: string;
}

const ENV_FIX = 'fix the variable or unset it to use its default (see docs/configuration.md)';

/**
 * The one parser of Baton's configuration: `schema` (whose keys are variable names, every default
 * in it) over `env`. A bad value throws ConfigError naming each variable, what it accepts and
 * the fix; a secret's value is never shown.
 */
export function parseEnv<S extends z.ZodObject>(
  schema: S,
  env: Env,
  options: ParseEnvOptions = {},
): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const nameOf = options.nameOf ?? ((v: string) => v);
  const problems = parsed.error.issues.map((issue) => {
    const variable = String(issue.path[0] ?? '');
    const value = env[variable];
    const shown =
      value === undefined || isSecretVariable(variable) ? '' : `=${JSON.stringify(value)}`;
    const field = schema.shape[variable] as z.ZodType | undefined;
    const accepted = field === undefined ? undefined : accepts(field);
    return `${nameOf(variable)}${shown}: ${issue.message}${accepted ? ` (accepts ${accepted})` : ''}`;
  });
  throw new ConfigError(`invalid configuration: ${problems.join('; ')}; ${options.fix ?? ENV_FIX}`);
}

interface Def {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly in?: z.ZodType;
  readonly defaultValue?: unknown;
}

function defOf(schema: z.ZodType): Def {
  return schema.def;
}

/** What a setting accepts, read from its schema: "a whole number from 1 to 1000 (default 32)". */
export function accepts(schema: z.ZodType): string {
  let node = schema;
  let fallback: unknown;
  let optional = false;
  for (;;) {
    const def = defOf(node);
    if (def.type === 'default' && def.innerType) {
      fallback = def.defaultValue;
      node = def.innerType;
    } else if (def.type === 'optional' && def.innerType) {
      optional = true;
      node = def.innerType;
    } else if (def.type === 'pipe' && def.in) node = def.in;
    else break;
  }
  const what = describe(node);
  const tail =
    fallback !== undefined
      ? ` (default ${JSON.stringify(fallback)})`
      : optional
        ? ', or unset'
        : '';
  return `${what}${tail}`;
}

function describe(node: z.ZodType): string {
  const type = defOf(node).type;
  if (type === 'number') {
    const n = node as unknown as {
      minValue: number | null;
      maxValue: number | null;
      format: string | null;
    };
    const kind = n.format === 'safeint' ? 'a whole number' : 'a number';
    const min = n.minValue !== null && Number.isFinite(n.minValue) ? n.minValue : undefined;
    const max =
      n.maxValue !== null && Number.isFinite(n.maxValue) && n.maxValue < Number.MAX_SAFE_INTEGER
        ? n.maxValue
        : undefined;
    if (min !== undefined && max !== undefined) return `${kind} from ${min} to ${max}`;
    if (min !== undefined) return `${kind} of at least ${min}`;
    if (max !== undefined) return `${kind} of at most ${max}`;
    return kind;
  }
  if (type === 'enum') {
    const options = (node as unknown as { options: readonly string[] }).options;
    return `one of ${options.join(', ')}`;
  }
  if (type === 'string') {
    const s = node as unknown as { format: string | null; minLength: number | null };
    if (s.format === 'url') return 'a URL';
    if (s.minLength !== null && s.minLength > 0)
      return `text of at least ${s.minLength} characters`;
    return 'text';
  }
  return type;
}
