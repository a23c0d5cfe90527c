import { Router } from 'express';
import type { ApiContext } from '../context.ts';
import { notFound } from '../errors.ts';
import { commonErrors, error, json, type OpenApiPaths } from '../openapi/shared.ts';

/** Agents as workers advertise them (name, mode, tools, stop conditions): data only. */
export function agentsRouter(ctx: ApiContext): Router {
  const router = Router();

  router.get('/agents', async (_req, res) => {
    res.json({ agents: await ctx.service.catalog.list() });
  });

  router.get('/agents/:name', async (req, res) => {
    const name = String(req.params['name']);
    const agent = await ctx.service.catalog.get(name);
    if (!agent) throw notFound(`agent ${name} is not advertised by any worker`);
    res.json(agent);
  });

  return router;
}

/** OpenAPI paths of agentsRouter. */
export const agentsPaths: OpenApiPaths = {
  '/v1/agents': {
    get: {
      tags: ['agents'],
      operationId: 'listAgents',
      summary:
        'Agents advertised by workers, each with its live workers and whether it is available',
      responses: { '200': json('AgentList', 'Agents'), ...commonErrors },
    },
  },
  '/v1/agents/{name}': {
    get: {
      tags: ['agents'],
      operationId: 'getAgent',
      summary: 'One advertised agent',
      parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': json('AgentDescriptor', 'Agent'),
        ...commonErrors,
        '404': error('not_found'),
      },
    },
  },
};
