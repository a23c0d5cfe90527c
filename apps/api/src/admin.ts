import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { BatonQueues } from '@baton/worker';
import type { RequestHandler } from 'express';
import { badRequest } from './errors.ts';

export const BULL_BOARD_PATH = '/admin/queues';

/** Bull Board over every Baton queue (mounted behind admin auth by app.ts). */
export function bullBoardRouter(queues: BatonQueues, basePath = BULL_BOARD_PATH): RequestHandler {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath);
  createBullBoard({
    queues: [
      new BullMQAdapter(queues.steps, { readOnlyMode: false }),
      new BullMQAdapter(queues.tools),
    ],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Baton queues' } },
  });
  return serverAdapter.getRouter() as RequestHandler;
}

const JOB_STATUSES = new Set([
  'latest',
  'active',
  'waiting',
  'waiting-children',
  'prioritized',
  'completed',
  'failed',
  'delayed',
  'paused',
]);
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

function decoded(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    throw badRequest(`${what} contains a malformed %-escape`);
  }
}

/**
 * Bull Board answers 500 to some query strings (a NUL status, a malformed escape in
 * activeQueue, which it decodes twice): its URL is checked here first, so bad input is a 400.
 */
export function bullBoardGuard(queues: BatonQueues): RequestHandler {
  const names = new Set([queues.steps.name, queues.tools.name]);
  return (req, _res, next) => {
    const url = req.originalUrl;
    const q = url.indexOf('?');
    if (CONTROL.test(decoded(q === -1 ? url : url.slice(0, q), 'the path')))
      throw badRequest('the path contains control characters');
    if (q === -1) {
      next();
      return;
    }
    for (const pair of url.slice(q + 1).split('&')) {
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const key = decoded(eq === -1 ? pair : pair.slice(0, eq), 'the query string');
      const value = decoded(eq === -1 ? '' : pair.slice(eq + 1), 'the query string');
      if (CONTROL.test(key) || CONTROL.test(value))
        throw badRequest('the query string contains control characters');
      if (key === 'status' && value !== '' && !JOB_STATUSES.has(value))
        throw badRequest(`status must be one of ${[...JOB_STATUSES].join(', ')}`);
      if (key === 'activeQueue' && value !== '' && !names.has(value))
        throw badRequest(`activeQueue must be one of ${[...names].join(', ')}`);
    }
    next();
  };
}
