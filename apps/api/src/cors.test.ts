import { describe, expect, it } from 'vitest';
import { ConfigError } from './config.ts';
import { parseCorsOrigins } from './cors.ts';

describe('parseCorsOrigins', () => {
  it('reads off, any origin, and a comma list', () => {
    expect(parseCorsOrigins('')).toEqual([]);
    expect(parseCorsOrigins(' * ')).toBe('*');
    expect(parseCorsOrigins('https://a.example, http://localhost:5173')).toEqual([
      'https://a.example',
      'http://localhost:5173',
    ]);
  });

  it.each(['a.example', 'https://a.example/', 'https://a.example/app'])(
    'refuses %s, naming CORS_ORIGINS',
    (value) => {
      expect(() => parseCorsOrigins(value)).toThrow(ConfigError);
      expect(() => parseCorsOrigins(value)).toThrow(/^CORS_ORIGINS: /);
    },
  );
});
