import { JsonValueSchema, MessageSchema } from '@baton/protocol';
import { z } from 'zod';

/**
 * What the route groups' OpenAPI path descriptions share: refs into components, the error
 * responses every authenticated route has, the security requirement, and query schemas as
 * parameters. Each router describes its own paths (`…Paths` next to it); openapi.ts assembles.
 */

export type Json = Record<string, unknown>;

/** A route group's entries of the document's `paths`, keyed by OpenAPI path (`/v1/runs/{id}`). */
export type OpenApiPaths = Record<string, Json>;

/** Schemas every component set refers to, registered with each so refs stay by name. */
const SHARED = { JsonValue: JsonValueSchema, Message: MessageSchema } as const;

/** JSON Schema 2020-12 (OpenAPI 3.1's dialect) for `schemas` as components, refs by id. */
export function components(
  schemas: Record<string, z.ZodType>,
  io: 'input' | 'output',
): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries({ ...SHARED, ...schemas }))
    registry.add(schema, { id });
  const out = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const result: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(out.schemas)) {
    const { $schema: _s, $id: _i, ...rest } = schema as Json;
    result[id] = rest;
  }
  return result;
}

/** A query schema's fields as optional `in: query` parameters. */
export function queryParameters(schema: z.ZodType): Json[] {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
  }) as Json;
  const properties = (json['properties'] ?? {}) as Record<string, Json>;
  return Object.entries(properties).map(([name, prop]) => ({
    name,
    in: 'query',
    required: false,
    schema: prop,
  }));
}

export const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });
export const json = (id: string, description: string): Json => ({
  description,
  content: { 'application/json': { schema: ref(id) } },
});
export const error = (description: string): Json => json('ErrorBody', description);

export const runIdParam: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Run id',
  schema: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$' },
};
export const threadIdParam: Json = { ...runIdParam, description: 'Thread id' };
export const idempotencyKeyParam: Json = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', maxLength: 255 },
};
export const secured = [{ bearerAuth: [] }, { apiKeyHeader: [] }];

export const commonErrors: Json = {
  '400': error('Malformed JSON, unknown fields or invalid values (details.issues lists each path)'),
  '401': error('Missing or invalid API key'),
  '429': error('Rate limited; see Retry-After'),
  '503': error('unavailable: Redis cannot be reached right now; retry after Retry-After'),
};

/** An SSE response whose frames the description explains. */
export const eventStream = (description: string): Json => ({
  description,
  content: { 'text/event-stream': { schema: { type: 'string' } } },
});

/** A protocol route's stream when it started a run: that run's token, in a header. */
export const startedRunStream = (description: string): Json => ({
  ...eventStream(description),
  headers: {
    'X-Baton-Public-Access-Token': {
      description:
        'When the request started a run: a token that reads it, decides its calls and starts the next turn on its thread (absent with ?publicAccessToken=false)',
      schema: { type: 'string' },
    },
  },
});
