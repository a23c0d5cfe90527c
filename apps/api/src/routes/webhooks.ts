import { RunWebhooksResponseSchema } from '@baton/protocol';
import { Router } from 'express';
import { principalOf } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { parseId } from '../validation.ts';
import { commonErrors, error, json, runIdParam, type OpenApiPaths } from '../openapi/shared.ts';

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

/** OpenAPI paths of webhooksRouter. */
export const webhooksPaths: OpenApiPaths = {
  '/v1/runs/{id}/webhooks': {
    get: {
      tags: ['runs'],
      operationId: 'getRunWebhooks',
      summary: "The run's webhook endpoints (no secrets) and delivery log, attempt by attempt",
      description:
        'Each message is POSTed with Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256>); its body is a WebhookMessage (see components). The webhook-id is the same on every retry and redelivery.',
      parameters: [runIdParam],
      responses: {
        '200': json('RunWebhooks', 'Endpoints and deliveries'),
        ...commonErrors,
        '404': error('run_not_found (also for another tenant’s run)'),
      },
    },
  },
};
