import {
  CreateWaitpointRequestSchema,
  SendEventRequestSchema,
  type JsonValue,
} from '@baton/protocol';
import type { RunWaits } from '@baton/runtime';
import { Router, type RequestHandler } from 'express';
import { principalOf } from '../auth.ts';
import { jsonBody } from '../body.ts';
import type { ApiContext } from '../context.ts';
import {
  commonErrors,
  error,
  json,
  ref,
  runIdParam,
  type OpenApiPaths,
} from '../openapi/shared.ts';
import { parseBody, parseId } from '../validation.ts';

/**
 * Largest body a waitpoint URL takes (413 past it): a completion is an answer, not a document,
 * and the URL needs no key, so its limit is well under BODY_LIMIT_BYTES.
 */
const WAITPOINT_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * POST /w/:token and POST /v1/waitpoints/:token: complete a waiting call with the URL's token
 * instead of an API key (mounted before /v1's authentication). The token is the secret: the
 * request log and traces show the path with it redacted (logger.ts, redactWaitpointPath).
 */
export function waitpointRouter(waits: RunWaits, limit: RequestHandler): Router {
  const router = Router();
  const complete: RequestHandler = async (req, res) => {
    const raw = req.params['token'];
    const token = typeof raw === 'string' ? raw : '';
    // No body (undefined): the call resumes without a payload.
    const outcome = await waits.completeWaitpoint(token, req.body as JsonValue | undefined);
    res.status(outcome.repeat ? 200 : 202).json(outcome);
  };
  // Routes, not a mounted router: metrics and traces label a request by its route's pattern
  // (`/w/:token`), where a mount would put the token itself in req.baseUrl.
  const body = jsonBody(WAITPOINT_BODY_LIMIT_BYTES);
  // Limited before the body is read: a client over its limit costs no parsing.
  router.post('/w/:token', limit, body, complete);
  router.post('/v1/waitpoints/:token', limit, body, complete);
  return router;
}

/** Tenant routes (under /v1's auth): create a waitpoint, send an event. */
export function waitsRouter(ctx: ApiContext): Router {
  const router = Router();
  router.post('/runs/:id/calls/:callId/waitpoint', async (req, res) => {
    const { tenantId } = principalOf(req);
    const runId = parseId(req.params['id'], 'run id');
    const callId = parseId(req.params['callId'], 'tool call id');
    const body = req.body === undefined ? {} : parseBody(CreateWaitpointRequestSchema, req);
    res
      .status(201)
      .json(await ctx.waits.createWaitpoint(tenantId, runId, callId, body.expiresInMs));
  });
  router.post('/events', async (req, res) => {
    const { tenantId } = principalOf(req);
    const body = parseBody(SendEventRequestSchema, req);
    res.json(await ctx.waits.sendEvent(tenantId, body));
  });
  return router;
}

const tokenParam = {
  name: 'token',
  in: 'path',
  required: true,
  description: 'The waitpoint token (a secret; returned once when the waitpoint was created)',
  schema: { type: 'string' },
};

const completeWaitpoint = {
  tags: ['waits'],
  security: [],
  summary: 'Complete a waiting call through its waitpoint URL (no API key)',
  description:
    "The body is the resume payload; it must satisfy the call's responseSchema (422) and be at most 64 KiB (413). Limited per client IP (WAITPOINT_RATE_LIMIT_PER_MINUTE, 429). 202 on the first completion; a repeat answers the first outcome (200) and changes nothing. A wrong or expired token: 404.",
  parameters: [tokenParam],
  requestBody: {
    required: false,
    content: { 'application/json': { schema: ref('JsonValue') } },
  },
  responses: {
    '202': json('WaitpointOutcome', 'Completed'),
    '200': json('WaitpointOutcome', 'Completed before (a repeat)'),
    '404': error('not_found: a wrong or expired token'),
    '409': error(
      'The call was answered otherwise (decision_conflict, call_not_suspended, run_done)',
    ),
    '413': error('payload_too_large: body over 64 KiB'),
    '422': error("payload_invalid: the body does not match the call's responseSchema"),
    '429': error(
      'rate_limited: over WAITPOINT_RATE_LIMIT_PER_MINUTE from this client; see Retry-After',
    ),
  },
};

/** OpenAPI paths of waitpointRouter and waitsRouter. */
export const waitsPaths: OpenApiPaths = {
  '/w/{token}': { post: { ...completeWaitpoint, operationId: 'completeWaitpoint' } },
  '/v1/waitpoints/{token}': {
    post: { ...completeWaitpoint, operationId: 'completeWaitpointV1' },
  },
  '/v1/runs/{id}/calls/{callId}/waitpoint': {
    post: {
      tags: ['waits'],
      operationId: 'createWaitpoint',
      summary: 'Create a waitpoint URL for a suspended call (201; the token is shown once)',
      parameters: [
        runIdParam,
        { ...runIdParam, name: 'callId', description: 'The suspended tool call' },
      ],
      requestBody: {
        required: false,
        content: { 'application/json': { schema: ref('CreateWaitpointRequest') } },
      },
      responses: {
        '201': json('WaitpointCreated', 'The URL (path) and token'),
        ...commonErrors,
        '404': error('run_not_found'),
        '409': error('call_unknown or call_not_suspended'),
      },
    },
  },
  '/v1/events': {
    post: {
      tags: ['waits'],
      operationId: 'sendEvent',
      summary: "Send an event: resumes every of the tenant's calls waiting for its name and key",
      description:
        'Each waiting call is resumed once, by one event; an event nobody waits for resumes nothing and is not kept (Inngest semantics).',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('SendEventRequest') } },
      },
      responses: {
        '200': json('SendEventResponse', 'How many calls the event resumed'),
        ...commonErrors,
      },
    },
  },
};
