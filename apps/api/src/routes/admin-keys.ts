import {
  CreateApiKeyRequestSchema,
  CreatedApiKeySchema,
  RotateApiKeyRequestSchema,
} from '@baton/protocol';
import { Router } from 'express';
import { z } from 'zod';
import { requireAdmin } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { DEFAULT_GRACE_SECONDS } from '../managed-keys.ts';
import { commonErrors, error, json, ref, type Json, type OpenApiPaths } from '../openapi/shared.ts';
import { parseBody, parseId, parseQuery } from '../validation.ts';

const ListKeysQuerySchema = z.strictObject({
  /** Only this tenant's keys. */
  tenant: z.string().min(1).max(128).optional(),
});

/**
 * Tenant API keys managed at run time (admin keys only): create, list, rotate with a grace
 * period, revoke. Effective on every API instance within a second (managed-keys.ts).
 */
export function adminKeysRouter(ctx: ApiContext): Router {
  const router = Router();
  const store = ctx.managedKeys;
  router.use('/admin/keys', requireAdmin);

  router.post('/admin/keys', async (req, res) => {
    const body = parseBody(CreateApiKeyRequestSchema, req);
    const created = CreatedApiKeySchema.parse(
      await store.create(body.tenant, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.expiresInSeconds !== undefined ? { expiresInSeconds: body.expiresInSeconds } : {}),
      }),
    );
    ctx.logger.info({ keyId: created.id, tenant: created.tenant }, 'managed API key created');
    res
      .status(201)
      .location(`/v1/admin/keys/${encodeURIComponent(created.id)}`)
      .json(created);
  });

  router.get('/admin/keys', async (req, res) => {
    const query = parseQuery(ListKeysQuerySchema, req);
    res.json({ keys: await store.list(query.tenant) });
  });

  router.post('/admin/keys/:id/rotate', async (req, res) => {
    const id = parseId(req.params['id'], 'key id');
    const body = req.body === undefined ? undefined : parseBody(RotateApiKeyRequestSchema, req);
    const created = await store.rotate(id, body?.graceSeconds ?? DEFAULT_GRACE_SECONDS);
    ctx.logger.info({ keyId: id, newKeyId: created.id }, 'managed API key rotated');
    res
      .status(201)
      .location(`/v1/admin/keys/${encodeURIComponent(created.id)}`)
      .json(created);
  });

  router.delete('/admin/keys/:id', async (req, res) => {
    const id = parseId(req.params['id'], 'key id');
    await store.revoke(id);
    ctx.logger.info({ keyId: id }, 'managed API key revoked');
    res.status(204).end();
  });

  return router;
}

const keyIdParam: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Managed key id (key_…)',
  schema: { type: 'string', minLength: 1, maxLength: 128 },
};
const adminErrors: Json = { ...commonErrors, '403': error('forbidden: needs an admin key') };

/** OpenAPI paths of adminKeysRouter. */
export const adminKeysPaths: OpenApiPaths = {
  '/v1/admin/keys': {
    post: {
      tags: ['admin'],
      operationId: 'createApiKey',
      summary: 'Create a tenant API key (201); the secret is in this answer only',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('CreateApiKeyRequest') } },
      },
      responses: { '201': json('CreatedApiKey', 'The key, with its secret'), ...adminErrors },
    },
    get: {
      tags: ['admin'],
      operationId: 'listApiKeys',
      summary: 'Managed tenant API keys, newest first (never the secret)',
      parameters: [
        {
          name: 'tenant',
          in: 'query',
          required: false,
          description: "Only this tenant's keys",
          schema: { type: 'string' },
        },
      ],
      responses: { '200': json('ApiKeyList', 'The keys'), ...adminErrors },
    },
  },
  '/v1/admin/keys/{id}/rotate': {
    post: {
      tags: ['admin'],
      operationId: 'rotateApiKey',
      summary:
        'Replace a key (201, the new secret); the old one keeps working for graceSeconds (default 3600)',
      parameters: [keyIdParam],
      requestBody: {
        required: false,
        content: { 'application/json': { schema: ref('RotateApiKeyRequest') } },
      },
      responses: {
        '201': json('CreatedApiKey', 'The new key, with its secret'),
        ...adminErrors,
        '404': error('not_found: no such key'),
        '409': error('conflict: the key was already rotated or has expired'),
      },
    },
  },
  '/v1/admin/keys/{id}': {
    delete: {
      tags: ['admin'],
      operationId: 'revokeApiKey',
      summary: 'Revoke a key now, on every API instance within a second (204)',
      parameters: [keyIdParam],
      responses: {
        '204': { description: 'Revoked' },
        ...adminErrors,
        '404': error('not_found: no such key'),
      },
    },
  },
};
