import { Router } from 'express';
import { PromoteAgentVersionRequestSchema, type AgentCurrentVersion } from '@baton/protocol';
import { requireAdmin } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { notFound } from '../errors.ts';
import { commonErrors, error, json, type OpenApiPaths } from '../openapi/shared.ts';
import { parseBody } from '../validation.ts';

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

  // The version new runs get is one setting for every tenant: operators (admin keys) change it.
  router.post('/agents/:name/promote', requireAdmin, async (req, res) => {
    const name = String(req.params['name']);
    const body = parseBody(PromoteAgentVersionRequestSchema, req);
    const changed = await ctx.service.versions.promote(name, body.version);
    const reply: AgentCurrentVersion = { agent: name, ...changed };
    ctx.logger.info(reply, 'agent version promoted');
    res.json(reply);
  });

  router.post('/agents/:name/rollback', requireAdmin, async (req, res) => {
    const name = String(req.params['name']);
    const changed = await ctx.service.versions.rollback(name);
    const reply: AgentCurrentVersion = { agent: name, ...changed };
    ctx.logger.info(reply, 'agent version rolled back');
    res.json(reply);
  });

  return router;
}

const nameParam = [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }];

/** OpenAPI paths of agentsRouter. */
export const agentsPaths: OpenApiPaths = {
  '/v1/agents': {
    get: {
      tags: ['agents'],
      operationId: 'listAgents',
      summary:
        'Agents advertised by workers, each with its live workers, its versions (workers and runs per version) and the current version',
      responses: { '200': json('AgentList', 'Agents'), ...commonErrors },
    },
  },
  '/v1/agents/{name}': {
    get: {
      tags: ['agents'],
      operationId: 'getAgent',
      summary: 'One advertised agent',
      parameters: nameParam,
      responses: {
        '200': json('AgentDescriptor', 'Agent'),
        ...commonErrors,
        '404': error('not_found'),
      },
    },
  },
  '/v1/agents/{name}/promote': {
    post: {
      tags: ['agents'],
      operationId: 'promoteAgentVersion',
      summary:
        'Admin keys: make a version the one new runs of the agent get (every API within 1 s)',
      parameters: nameParam,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/PromoteAgentVersionRequest' },
          },
        },
      },
      responses: {
        '200': json('AgentCurrentVersion', 'The current version now'),
        ...commonErrors,
        '403': error('forbidden'),
        '404': error('not_found'),
      },
    },
  },
  '/v1/agents/{name}/rollback': {
    post: {
      tags: ['agents'],
      operationId: 'rollbackAgentVersion',
      summary:
        'Admin keys: new runs of the agent get the version current before the last promote again',
      parameters: nameParam,
      responses: {
        '200': json('AgentCurrentVersion', 'The current version now'),
        ...commonErrors,
        '403': error('forbidden'),
        '409': error('conflict'),
      },
    },
  },
};
