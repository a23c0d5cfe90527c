import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from './openapi.ts';

describe('/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const doc = buildOpenApiDocument();
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('is generated from the zod schemas, every $ref resolves', () => {
    const doc = buildOpenApiDocument() as {
      components: { schemas: Record<string, unknown> };
      paths: Record<string, unknown>;
    };
    const schemas = doc.components.schemas;
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining([
        'CreateRunRequest',
        'SubmitDecisionsRequest',
        'RunSnapshot',
        'RunEvent',
        'ErrorBody',
        'JsonValue',
        'RunWebhooks',
        'WebhookMessage',
      ]),
    );
    expect(schemas['CreateRunRequest']).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['agent', 'input'],
    });
    const refs = [
      ...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g),
    ].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) expect(schemas[ref], ref).toBeDefined();
    expect(JSON.stringify(doc)).not.toContain('#/$defs');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/runs',
        '/v1/runs/{id}',
        '/v1/runs/{id}/events',
        '/v1/runs/{id}/decisions',
        '/v1/runs/{id}/cancel',
        '/v1/runs/{id}/webhooks',
        '/v1/threads/{id}',
        '/v1/threads/{id}/runs',
        '/v1/agents',
        '/v1/schedules',
        '/v1/schedules/{id}',
        '/v1/schedules/{id}/pause',
        '/v1/schedules/{id}/resume',
        '/v1/schedules/{id}/runs',
      ]),
    );
    expect(schemas['CreateScheduleRequest']).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['agent', 'input'],
    });
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining(['Schedule', 'ScheduleDetail', 'SchedulePage']),
    );
  });

  it('describes every field of the main requests and responses', () => {
    const doc = buildOpenApiDocument() as { components: { schemas: Record<string, Schema> } };
    const schemas = doc.components.schemas;
    const resolve = (schema: Schema): Schema => {
      const ref = schema.$ref?.replace('#/components/schemas/', '');
      return ref === undefined ? schema : resolve(schemas[ref]!);
    };
    const field = (schema: Schema, name: string): Schema =>
      resolve(resolve(schema).properties![name]!);
    /** Properties of `schema` without a description, by path. */
    const undescribed = (schema: Schema, path: string): string[] =>
      Object.entries(resolve(schema).properties ?? {})
        .filter(([, prop]) => typeof prop.description !== 'string' || prop.description === '')
        .map(([name]) => `${path}.${name}`);

    const createRun = schemas['CreateRunRequest']!;
    const decisions = schemas['SubmitDecisionsRequest']!;
    const errorBody = schemas['ErrorBody']!;
    const events = schemas['RunEvent']!.oneOf ?? schemas['RunEvent']!.anyOf ?? [];
    expect(events.length).toBeGreaterThan(10);
    const missing = [
      ...undescribed(createRun, 'CreateRunRequest'),
      ...undescribed(field(createRun, 'input'), 'CreateRunRequest.input'),
      ...undescribed(field(createRun, 'options'), 'CreateRunRequest.options'),
      ...undescribed(decisions, 'SubmitDecisionsRequest'),
      ...undescribed(field(decisions, 'decisions').items!, 'SubmitDecisionsRequest.decisions[]'),
      ...undescribed(schemas['RunSnapshot']!, 'RunSnapshot'),
      ...undescribed(errorBody, 'ErrorBody'),
      ...undescribed(field(errorBody, 'error'), 'ErrorBody.error'),
      ...events.flatMap((event) =>
        ['seq', 'runId', 'threadId', 'turnId', 'at']
          .filter((name) => !resolve(event).properties?.[name]?.description)
          .map((name) => `RunEvent.${name}`),
      ),
    ];
    expect(missing).toEqual([]);
    expect(field(createRun, 'agent').description).toMatch(/agent/);
  });
});

interface Schema {
  readonly $ref?: string;
  readonly description?: string;
  readonly properties?: Record<string, Schema>;
  readonly items?: Schema;
  readonly oneOf?: Schema[];
  readonly anyOf?: Schema[];
}
