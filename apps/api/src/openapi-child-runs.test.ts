import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from './openapi.ts';

type Doc = {
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
  paths: Record<string, Record<string, { parameters?: { name: string; schema?: unknown }[] }>>;
};

describe('/openapi.json: child runs (agent-as-tool)', () => {
  const doc = buildOpenApiDocument() as Doc;

  it('documents the tree stream: children=1 and the composite Last-Event-ID', () => {
    const params = doc.paths['/v1/runs/{id}/events']?.['get']?.parameters ?? [];
    expect(params.find((p) => p.name === 'children')?.schema).toMatchObject({ enum: ['0', '1'] });
    const cursor = params.find((p) => p.name === 'Last-Event-ID')?.schema as { pattern: string };
    expect(new RegExp(cursor.pattern).test('12;s1c0=5;s1c0.s2c1=3')).toBe(true);
    expect(new RegExp(cursor.pattern).test('12')).toBe(true);
  });

  it('documents childRuns in the run view, runId on decisions and awaited calls, routed answers', () => {
    const s = doc.components.schemas;
    expect(s['RunView']?.properties).toHaveProperty('childRuns');
    expect(JSON.stringify(s['RunView'])).toContain('childRunId');
    expect(JSON.stringify(s['SubmitDecisionsRequest'])).toContain('"runId"');
    expect(s['DecisionsResponse']?.properties).toHaveProperty('routed');
    expect(JSON.stringify(s['RunEvent'])).toContain('child_run.linked');
  });
});
