import type { JsonObject, JsonValue } from '@baton/protocol';
import { FieldInputError } from './field-input-error.ts';

export { FieldInputError };

/**
 * A decision payload form derived from a suspended call's responseSchema (JSON Schema), for any
 * UI that asks a person (the CLI's prompts, the console's form). Flat objects get one field per
 * property; anything else is one raw-JSON field. Answers are typed text, coerced here.
 */
export type FormField =
  | {
      readonly kind: 'string' | 'number' | 'integer' | 'boolean';
      readonly name: string;
      readonly required: boolean;
      readonly description?: string;
    }
  | {
      readonly kind: 'enum';
      readonly name: string;
      readonly required: boolean;
      readonly options: readonly JsonValue[];
      readonly description?: string;
    }
  | {
      readonly kind: 'json';
      readonly name: string;
      readonly required: boolean;
      readonly description?: string;
    };

export interface PayloadForm {
  /** One field per property; a single field named '' stands for the whole payload as JSON. */
  readonly fields: readonly FormField[];
  /** True when the schema is an object of fields (the payload is `{name: value}`). */
  readonly object: boolean;
}

function fieldOf(name: string, schema: unknown, required: boolean): FormField {
  const s = (schema ?? {}) as {
    type?: unknown;
    enum?: unknown;
    description?: unknown;
    const?: unknown;
  };
  const description = typeof s.description === 'string' ? { description: s.description } : {};
  if (Array.isArray(s.enum))
    return { kind: 'enum', name, required, options: s.enum as JsonValue[], ...description };
  if (s.type === 'string' || s.type === 'number' || s.type === 'integer' || s.type === 'boolean')
    return { kind: s.type, name, required, ...description };
  return { kind: 'json', name, required, ...description };
}

export function payloadForm(schema: JsonObject | undefined): PayloadForm {
  if (!schema) return { fields: [], object: false };
  const s = schema as { type?: unknown; properties?: unknown; required?: unknown };
  if (s.type === 'object' && s.properties !== null && typeof s.properties === 'object') {
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    return {
      object: true,
      fields: Object.entries(s.properties as Record<string, unknown>).map(([name, p]) =>
        fieldOf(name, p, required.has(name)),
      ),
    };
  }
  return { object: false, fields: [fieldOf('', schema, true)] };
}

/** An enum option as typed and shown: strings bare, anything else as JSON. */
function show(option: JsonValue): string {
  return typeof option === 'string' ? option : JSON.stringify(option);
}

/** The value typed for `field`; undefined for an empty optional answer. Throws FieldInputError. */
export function coerceField(field: FormField, input: string): JsonValue | undefined {
  const text = input.trim();
  if (text === '') {
    if (field.required) throw new FieldInputError(`${field.name || 'payload'} is required`);
    return undefined;
  }
  switch (field.kind) {
    case 'string':
      return text;
    case 'number':
    case 'integer': {
      const n = Number(text);
      if (!Number.isFinite(n) || (field.kind === 'integer' && !Number.isInteger(n)))
        throw new FieldInputError(
          `${field.name} must be ${field.kind === 'integer' ? 'an integer' : 'a number'}`,
        );
      return n;
    }
    case 'boolean':
      if (/^(y|yes|true)$/i.test(text)) return true;
      if (/^(n|no|false)$/i.test(text)) return false;
      throw new FieldInputError(`${field.name} must be yes or no`);
    case 'enum': {
      const match = field.options.find((o) => show(o) === text);
      if (match === undefined)
        throw new FieldInputError(
          `${field.name} must be one of ${field.options.map(show).join(', ')}`,
        );
      return match;
    }
    case 'json':
      try {
        return JSON.parse(text) as JsonValue;
      } catch {
        throw new FieldInputError(`${field.name || 'payload'} must be JSON`);
      }
  }
}

/** The question shown for a field. */
export function fieldPrompt(field: FormField): string {
  const hint =
    field.kind === 'enum'
      ? field.options.map(show).join('/')
      : field.kind === 'json'
        ? 'JSON'
        : field.kind;
  const name = field.name === '' ? 'payload' : field.name;
  return `  ${name} (${hint}${field.required ? '' : ', optional'})${field.description ? ` – ${field.description}` : ''}: `;
}
