import express from 'express';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './config.ts';
import { parseCorsOrigins, routeMethods, type RouterLayer } from './cors.ts';

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

describe('routeMethods', () => {
  it('lists the methods of the routes that exist, nested routers included', () => {
    const app = express();
    const inner = express.Router();
    inner.delete('/things/:id', (_req, res) => res.end());
    inner.put('/things/:id', (_req, res) => res.end());
    const outer = express.Router();
    outer.use((_req, _res, next) => next(), inner);
    app.use('/v9', outer);
    app.get('/ping', (_req, res) => res.end());
    const { stack } = (app as unknown as { router: { stack: RouterLayer[] } }).router;
    expect(routeMethods(stack)).toEqual(['DELETE', 'GET', 'OPTIONS', 'PUT']);
  });
});
