import { describe, expect, it } from 'vitest';
import { coerceField, fieldPrompt, payloadForm, FieldInputError } from './payload-form.ts';

describe('payloadForm', () => {
  it('an object schema becomes one field per property, with types, enums and required', () => {
    const form = payloadForm({
      type: 'object',
      properties: {
        comment: { type: 'string' },
        replicas: { type: 'integer', description: 'how many' },
        env: { enum: ['staging', 'production'] },
        force: { type: 'boolean' },
        extra: { type: 'object' },
      },
      required: ['env'],
    });
    expect(form.object).toBe(true);
    expect(form.fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ['comment', 'string', false],
      ['replicas', 'integer', false],
      ['env', 'enum', true],
      ['force', 'boolean', false],
      ['extra', 'json', false],
    ]);
    expect(fieldPrompt(form.fields[1]!)).toBe('  replicas (integer, optional) – how many: ');
  });

  it('no schema is no form; a non-object schema is one JSON answer', () => {
    expect(payloadForm(undefined)).toEqual({ fields: [], object: false });
    expect(payloadForm({ type: 'array' })).toEqual({
      object: false,
      fields: [{ kind: 'json', name: '', required: true }],
    });
  });
});

describe('coerceField', () => {
  it('coerces typed answers and rejects bad ones with a message', () => {
    expect(coerceField({ kind: 'integer', name: 'n', required: true }, ' 3 ')).toBe(3);
    expect(() => coerceField({ kind: 'integer', name: 'n', required: true }, '3.5')).toThrow(
      FieldInputError,
    );
    expect(coerceField({ kind: 'boolean', name: 'b', required: true }, 'yes')).toBe(true);
    expect(coerceField({ kind: 'enum', name: 'e', required: true, options: ['a', 2] }, '2')).toBe(
      2,
    );
    expect(() =>
      coerceField({ kind: 'enum', name: 'e', required: true, options: ['a'] }, 'b'),
    ).toThrow(/one of a/);
    expect(coerceField({ kind: 'json', name: '', required: true }, '{"a":[1]}')).toEqual({
      a: [1],
    });
    expect(coerceField({ kind: 'string', name: 's', required: false }, '  ')).toBeUndefined();
    expect(() => coerceField({ kind: 'string', name: 's', required: true }, '')).toThrow(
      /required/,
    );
  });
});
