import { MintTokenRequestSchema, RevokeTokensRequestSchema } from '@baton/protocol';
import { Router } from 'express';
import { principalOf, requireAdmin } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { commonErrors, error, ref, type OpenApiPaths } from '../openapi/shared.ts';
import { parseBody } from '../validation.ts';

/** GET /.well-known/jwks.json: the public keys Baton's tokens are signed with (no auth). */
export function jwksRouter(ctx: ApiContext): Router {
  const router = Router();
  router.get('/.well-known/jwks.json', (_req, res) => {
    // Short: a verifier elsewhere that meets an unknown kid refetches anyway (jose does).
    res.setHeader('Cache-Control', 'public, max-age=60');
    res.json(ctx.tokens.keys.jwks());
  });
  return router;
}

/**
 * POST /v1/tokens (mint, tenant key), POST /v1/tokens/revoke (one token or a subject's), and the
 * admin routes of the signing keys (GET /v1/admin/token-keys, POST …/rotate).
 */
export function tokensRouter(ctx: ApiContext): Router {
  const router = Router();

  router.post('/tokens', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(MintTokenRequestSchema, req);
    res.status(201).json(await ctx.tokens.mint(principal, body));
  });

  router.post('/tokens/revoke', async (req, res) => {
    const { tenantId } = principalOf(req);
    const body = parseBody(RevokeTokensRequestSchema, req);
    if ('tokenId' in body)
      await ctx.tokens.revocations.revoke({ kind: 'jti', tenantId, jti: body.tokenId });
    else
      await ctx.tokens.revocations.revoke({
        kind: 'subject',
        tenantId,
        subject: body.subject,
        at: Math.floor(Date.now() / 1000),
      });
    res.status(202).json({ revoked: body });
  });

  router.get('/admin/token-keys', requireAdmin, (_req, res) => {
    res.json({ keys: ctx.tokens.keys.list() });
  });

  router.post('/admin/token-keys/rotate', requireAdmin, async (_req, res) => {
    const kid = await ctx.tokens.keys.rotate();
    res.status(201).json({ kid, keys: ctx.tokens.keys.list() });
  });

  return router;
}

const tokenSchema = {
  type: 'object',
  required: ['token', 'tokenId', 'expiresAt', 'scopes', 'oneUse'],
  properties: {
    token: { type: 'string', description: 'The JWT (Authorization: Bearer <token>)' },
    tokenId: { type: 'string', description: 'Its jti, to revoke it' },
    expiresAt: { type: 'integer', description: 'ms since the epoch' },
    scopes: { type: 'array', items: { type: 'string' } },
    subject: { type: 'string' },
    oneUse: { type: 'boolean' },
  },
};

const keyList = {
  description: 'The signing keys (ids and dates only; no key material)',
  content: {
    'application/json': {
      schema: {
        type: 'object',
        properties: {
          kid: { type: 'string' },
          keys: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                kid: { type: 'string' },
                createdAt: { type: 'integer' },
                retiredAt: { type: 'integer' },
                signing: { type: 'boolean' },
              },
            },
          },
        },
      },
    },
  },
};

/** OpenAPI paths of jwksRouter and tokensRouter. */
export const tokensPaths: OpenApiPaths = {
  '/.well-known/jwks.json': {
    get: {
      tags: ['tokens'],
      operationId: 'jwks',
      summary: "The public keys of Baton's tokens (JWKS, ES256)",
      security: [],
      responses: {
        '200': {
          description: 'JWK set',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: { keys: { type: 'array', items: { type: 'object' } } },
              },
            },
          },
        },
      },
    },
  },
  '/v1/tokens': {
    post: {
      tags: ['tokens'],
      operationId: 'mintToken',
      summary: 'Mint a scoped token (JWT) for an end user (tenant API key only)',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('MintTokenRequest') } },
      },
      responses: {
        '201': {
          description: 'The token',
          content: { 'application/json': { schema: tokenSchema } },
        },
        ...commonErrors,
        '403': error('forbidden: a token cannot mint tokens'),
      },
    },
  },
  '/v1/tokens/revoke': {
    post: {
      tags: ['tokens'],
      operationId: 'revokeTokens',
      summary:
        'Revoke one token (tokenId) or every token of a subject issued so far; every API refuses them within 1 s and closes their streams',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('RevokeTokensRequest') } },
      },
      responses: {
        '202': {
          description: 'Revoked (the request echoed as `revoked`)',
          content: {
            'application/json': {
              schema: { type: 'object', properties: { revoked: ref('RevokeTokensRequest') } },
            },
          },
        },
        ...commonErrors,
        '403': error('forbidden: needs a tenant API key'),
      },
    },
  },
  '/v1/admin/token-keys': {
    get: {
      tags: ['tokens'],
      operationId: 'listTokenKeys',
      summary: 'The token signing keys (admin key)',
      responses: { '200': keyList, ...commonErrors, '403': error('forbidden: needs an admin key') },
    },
  },
  '/v1/admin/token-keys/rotate': {
    post: {
      tags: ['tokens'],
      operationId: 'rotateTokenKeys',
      summary:
        'A new signing key (admin key): it signs from now on, on every API within 1 s; the old ones verify until their tokens expire',
      responses: {
        '201': keyList,
        ...commonErrors,
        '403': error('forbidden: needs an admin key'),
      },
    },
  },
};
