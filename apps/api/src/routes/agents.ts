import { Router } from 'express';
import type { ApiContext } from '../context.ts';
import { notFound } from '../errors.ts';

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
