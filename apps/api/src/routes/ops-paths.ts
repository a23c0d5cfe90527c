import { json, type OpenApiPaths } from '../openapi/shared.ts';

/**
 * OpenAPI paths of opsRouter. Beside ops.ts rather than in it: ops.ts serves the document that
 * openapi.ts assembles from these, and an import back would be a cycle.
 */
export const opsPaths: OpenApiPaths = {
  '/healthz': {
    get: {
      tags: ['ops'],
      operationId: 'healthz',
      security: [],
      responses: { '200': json('Health', 'Process is up') },
    },
  },
  '/readyz': {
    get: {
      tags: ['ops'],
      operationId: 'readyz',
      security: [],
      responses: {
        '200': json(
          'Health',
          'Redis and queues usable; `workers` says how many workers heartbeat (0: `down`), which never makes it 503',
        ),
        '503': json('Health', 'Not ready'),
      },
    },
  },
  '/metrics': {
    get: {
      tags: ['ops'],
      operationId: 'metrics',
      description:
        'Needs METRICS_KEY or an admin key as a bearer token, unless METRICS_PUBLIC=true',
      responses: {
        '200': {
          description: 'Prometheus text format',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
      },
    },
  },
  '/openapi.json': {
    get: {
      tags: ['ops'],
      operationId: 'openapi',
      security: [],
      responses: {
        '200': {
          description: 'This document',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  },
};
