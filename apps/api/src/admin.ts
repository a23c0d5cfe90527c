import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { BatonQueues } from '@baton/worker';
import type { RequestHandler } from 'express';

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
