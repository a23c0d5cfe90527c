import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { BatonQueues } from '@baton/runtime/internal';
import type { Queue } from 'bullmq';
import type { RequestHandler } from 'express';
import { badRequest } from './errors.ts';

export const BULL_BOARD_PATH = '/admin/queues';

/**
 * The queues Bull Board shows: every shard of every known task queue, the queues producers used
 * (earlier K, per-agent layout) and the legacy pair. Agents and their task queues appear as
 * workers advertise them, so the list is looked up again (at most once a second) on use.
 */
export class BoardQueues {
  readonly queues: BatonQueues;
  private readonly agents: () => Promise<string[]>;
  private current: Queue[] = [];
  private fetchedAt = -Infinity;
  private pending: Promise<Queue[]> | null = null;
  private readonly listeners: ((queues: Queue[]) => void)[] = [];

  constructor(queues: BatonQueues, agents: () => Promise<string[]>) {
    this.queues = queues;
    this.agents = agents;
    this.current = [queues.legacySteps, queues.legacyTools];
  }

  /** Called with the new list whenever it changes. */
  onChange(listener: (queues: Queue[]) => void): void {
    this.listeners.push(listener);
    listener(this.current);
  }

  async list(): Promise<Queue[]> {
    if (Date.now() - this.fetchedAt < 1000) return this.current;
    this.pending ??= this.agents()
      .then((names) => this.queues.listQueues(names))
      .then((next) => {
        this.fetchedAt = Date.now();
        const changed =
          next.length !== this.current.length || next.some((q, i) => q !== this.current[i]);
        this.current = next;
        if (changed) for (const l of this.listeners) l(next);
        return next;
      })
      .finally(() => {
        this.pending = null;
      });
    return this.pending;
  }
}

/** Bull Board over every Baton queue (mounted behind admin auth by app.ts). */
export function bullBoardRouter(board: BoardQueues, basePath = BULL_BOARD_PATH): RequestHandler {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath);
  const { replaceQueues } = createBullBoard({
    queues: [],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Baton queues' } },
  });
  board.onChange((queues) =>
    replaceQueues(queues.map((q) => new BullMQAdapter(q, { readOnlyMode: false }))),
  );
  const router = serverAdapter.getRouter() as RequestHandler;
  return (req, res, next) => {
    board.list().then(() => router(req, res, next), next);
  };
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
export function bullBoardGuard(board: BoardQueues): RequestHandler {
  return async (req, _res, next) => {
    const names = new Set((await board.list()).map((q) => q.name));
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
