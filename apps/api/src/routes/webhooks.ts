import { RunWebhooksResponseSchema } from '@baton/protocol';
import { Router } from 'express';
import { principalOf } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { parseId } from '../validation.ts';

/** A run's webhook endpoints (never their secrets) and delivery log. */
export function webhooksRouter(ctx: ApiContext): Router {
  const router = Router();
  router.get('/runs/:id/webhooks', async (req, res) => {
    const { tenantId } = principalOf(req);
    const runId = parseId(req.params['id'], 'run id');
    // 404 for another tenant's run, as everywhere (the service checks).
    res.json(RunWebhooksResponseSchema.parse(await ctx.service.webhooks(tenantId, runId)));
  });
  return router;
}
