import { IdSchema } from '@baton/protocol';
import type { Request } from 'express';
import type { z } from 'zod';
import { badRequest, validationError } from './errors.ts';

/** Parses the JSON body with a protocol schema; 400s name every offending field. */
export function parseBody<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  if (req.body === undefined)
    throw badRequest('this route needs a JSON body: send Content-Type: application/json');
  const parsed = schema.safeParse(req.body);
  if (!parsed.success) throw validationError(parsed.error, 'body');
  return parsed.data;
}

export function parseQuery<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  // A stream's token (auth.ts: queryToken) is the credential, not one of the route's parameters.
  let query = req.query as Record<string, unknown>;
  if (req.principal?.credential.kind !== 'api-key' && 'access_token' in query) {
    const { access_token: _token, ...rest } = query;
    query = rest;
  }
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw validationError(parsed.error, 'query');
  return parsed.data;
}

/** Run, thread and other ids in URLs: the protocol's id rules. */
export function parseId(value: unknown, what: string): string {
  const parsed = IdSchema.safeParse(value);
  if (!parsed.success)
    throw badRequest(
      `${what} in the URL is invalid: ${parsed.error.issues[0]?.message ?? 'bad id'} (1-128 characters)`,
      { param: what },
    );
  return parsed.data;
}
