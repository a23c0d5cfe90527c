import { runDecideScope, runReadScope, threadReadScope, threadRunScope } from '@baton/protocol';
import type { Request, Response } from 'express';
import type { Principal } from './auth.ts';
import type { ApiContext } from './context.ts';

/** The response header of a protocol route that started a run: that run's token. */
const PUBLIC_ACCESS_TOKEN_HEADER = 'X-Baton-Public-Access-Token';

/**
 * The token a created run's response carries (publicAccessToken): it reads the run and decides
 * its calls, and on a thread the caller named, reads the thread and starts its next run. Minted
 * per answer (a replay gets a fresh one), never stored. `?publicAccessToken=false` turns it off.
 */
export async function publicAccessToken(
  ctx: ApiContext,
  req: Request,
  principal: Principal,
  run: { runId: string; threadId: string },
  onThread: boolean,
): Promise<string | undefined> {
  if ((req.query as Record<string, unknown>)['publicAccessToken'] === 'false') return undefined;
  const scopes = [runReadScope(run.runId), runDecideScope(run.runId)];
  if (onThread) scopes.push(threadReadScope(run.threadId), threadRunScope(run.threadId));
  const minted = await ctx.tokens.issue(principal.tenantId, {
    scopes,
    ...(principal.subject !== undefined ? { subject: principal.subject } : {}),
  });
  return minted.token;
}

/**
 * A protocol route's (AI SDK, AG-UI) publicAccessToken for the run it started, as a response
 * header (the body is the stream): the run and its thread, whose next turn it may start.
 */
export async function setPublicAccessToken(
  ctx: ApiContext,
  req: Request,
  res: Response,
  principal: Principal,
  run: { runId: string; threadId: string },
): Promise<void> {
  const token = await publicAccessToken(ctx, req, principal, run, true);
  if (token !== undefined) res.setHeader(PUBLIC_ACCESS_TOKEN_HEADER, token);
}
