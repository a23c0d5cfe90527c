import { endsStream, type RunEvent } from '@baton/protocol';
import { Router, type Request, type Response } from 'express';
import { BatonError, activityOf } from '@baton/core';
import { principalOf } from '../auth.ts';
import type { ApiContext } from '../context.ts';
import { EventsQuerySchema } from '../schemas.ts';
import { eventFrame, rewoundFrame } from '../sse.ts';
import { MAX_BUFFERED_BYTES, openSseConnection, type SseConnection } from '../sse-connection.ts';
import { parseId, parseQuery } from '../validation.ts';
import { streamRunTree } from './tree-events.ts';
import {
  commonErrors,
  error,
  queryParameters,
  ref,
  runIdParam,
  type OpenApiPaths,
} from '../openapi/shared.ts';

function afterSeqOf(req: Request, queryAfter: number | undefined): number {
  const header = req.headers['last-event-id'];
  if (typeof header === 'string' && header.trim() !== '') {
    const value = header.trim();
    if (!/^\d{1,15}$/.test(value))
      throw new BatonError(
        'bad_request',
        'Last-Event-ID must be the id (sequence number) of an event received earlier',
      );
    return Number(value);
  }
  return queryAfter ?? 0;
}

/**
 * The live part of one run's stream: a frame per event, the stream's end. Its state is fields of
 * one object (not the route's scope, which would be kept for the stream's whole life).
 */
class LiveFrames {
  private readonly conn: SseConnection;
  private readonly res: Response;
  private readonly until: 'done' | 'suspended';
  private readonly lag: { observe(seconds: number): void };

  constructor(
    conn: SseConnection,
    res: Response,
    until: 'done' | 'suspended',
    lag: { observe(seconds: number): void },
  ) {
    this.conn = conn;
    this.res = res;
    this.until = until;
    this.lag = lag;
  }

  readonly onEvent = (event: RunEvent): void => {
    const conn = this.conn;
    if (conn.finished) return;
    conn.stream.write(eventFrame(event));
    this.lag.observe(Math.max(0, Date.now() - event.at) / 1000);
    if (endsStream(event, this.until) || this.res.writableLength > MAX_BUFFERED_BYTES)
      conn.finish();
  };

  readonly onRewound = (rewound: Parameters<typeof rewoundFrame>[0]): void => {
    const conn = this.conn;
    if (conn.finished) return;
    conn.stream.write(rewoundFrame(rewound));
    conn.finish();
  };
}

/**
 * GET /v1/runs/:id/events: replays the durable stream after Last-Event-ID (or ?after=), then
 * continues live with no gap and no duplicate (RunService.openEvents: the subscriber subscribes
 * first, reads the backlog second and de-duplicates by sequence), or replays an archived run.
 */
export function eventsRouter(ctx: ApiContext): Router {
  const router = Router();

  router.get('/runs/:id/events', async (req, res) => {
    const principal = principalOf(req);
    const { tenantId } = principal;
    const runId = parseId(req.params['id'], 'run id');
    const query = parseQuery(EventsQuerySchema, req);
    if (query.children === '1') {
      await ctx.service.load(tenantId, runId);
      await streamRunTree(ctx, req, res, tenantId, runId, query);
      return;
    }
    const after = afterSeqOf(req, query.after);
    const until = query.until ?? 'done';
    // The tenant check and the log's end in one read: a client that has not seen everything
    // yet (the usual case) is streamed to, whatever the checkpoint says.
    const end = await ctx.service.logEnd(tenantId, runId);
    let lastSeq = end.lastSeq;
    let idle = false;
    if (after >= lastSeq) {
      // Whether the stream would end at once needs the checkpoint; the log's end is read again
      // after it, so an event committed in between (the run's last, say) is not missed.
      const { checkpoint } = await ctx.service.load(tenantId, runId);
      lastSeq = await ctx.service.lastSeq(tenantId, runId);
      // core's one idle predicate (a partly decided batch_all_suspended round is idle too).
      const activity = activityOf(checkpoint);
      idle = activity === 'done' || (until === 'suspended' && activity === 'waiting');
    }
    if (after > lastSeq)
      // The client saw events the log no longer has: Redis lost acknowledged writes (a restart
      // without them). Its view must be rebuilt, not continued: the seqs after lastSeq will be
      // reused for different events.
      throw new BatonError(
        'event_log_rewound',
        `the run's event log ends at seq ${lastSeq} but Last-Event-ID/after is ${after}: the store lost events after a restart; drop what you received after seq ${lastSeq} and read again from there`,
        { lastSeq, after },
      );
    if (after >= lastSeq && idle) {
      // Nothing more will come: 204 also tells a browser EventSource not to reconnect.
      res.status(204).end();
      return;
    }
    // A run only the archive still has (Redis let it go) is replayed: its events after `after`,
    // then the end. Any other is followed live once the stream is open.
    const opened = await ctx.service.openEvents(tenantId, runId, after, end);
    const conn = await openSseConnection(ctx, res, tenantId);
    conn.stream.comment(`run ${runId} after ${after}`);
    if (opened.archived) {
      for (const event of opened.events) {
        if (conn.finished) break;
        conn.stream.write(eventFrame(event));
        if (endsStream(event, until)) break;
      }
      conn.finish();
      return;
    }
    // The routers' per-request state (their `next` closures and what those hold) is not needed
    // once the response is a stream, and it would otherwise live as long as the stream.
    req.next = undefined;
    const live = new LiveFrames(conn, res, until, ctx.metrics.sseEventLag);
    try {
      await conn.adopt(await opened.follow(live));
    } catch (error) {
      req.log.warn({ err: error, runId }, 'event subscription failed');
      conn.finish();
    }
  });

  return router;
}

/** OpenAPI paths of eventsRouter. */
export const eventsPaths: OpenApiPaths = {
  '/v1/runs/{id}/events': {
    get: {
      tags: ['runs'],
      operationId: 'streamRunEvents',
      summary: 'Server-Sent Events: replay after Last-Event-ID / after, then live',
      description:
        "Each frame: `id:` (seq), `event:` (type), `data:` (RunEvent JSON). `: ping` comments are heartbeats. 204 when nothing more will come. With `children=1` the stream also carries the events of the run's child runs (agent-as-tool; the envelope `runId` says whose) and `id:` is a composite cursor `<seq>;<child suffix>=<seq>…` to send back as Last-Event-ID; it ends when the whole tree is done (`until=suspended` is refused with it, 400).",
      parameters: [
        runIdParam,
        {
          name: 'Last-Event-ID',
          in: 'header',
          required: false,
          schema: { type: 'string', pattern: '^[0-9]+(;[A-Za-z0-9._:-]+=[0-9]+)*$' },
        },
        ...queryParameters(EventsQuerySchema),
      ],
      responses: {
        '200': {
          description: 'Event stream',
          content: {
            'text/event-stream': {
              schema: {
                type: 'string',
                description: 'SSE frames; each data line is a RunEvent',
              },
              'x-event-schema': ref('RunEvent'),
            },
          },
        },
        '204': {
          description:
            'The run is done (or waiting, with until=suspended) and every event was already received',
        },
        ...commonErrors,
        '404': error('run_not_found'),
      },
    },
  },
};
