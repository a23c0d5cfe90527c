import { activityOf } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { Router, type Request, type RequestHandler } from 'express';
import { principalOf } from '../../auth.ts';
import type { ApiContext } from '../../context.ts';
import { parseId } from '../../validation.ts';
import {
  RunStream,
  loadThread,
  startRun,
  submitToThread,
  threadIdOf,
  type FrameSink,
} from '../run-stream.ts';
import { badRequest } from '../shared.ts';
import { CURRENT_AI_SDK_MAJOR, SUPPORTED_AI_SDK_MAJORS, type AiSdkMajor } from './chunks.ts';
import { createUiStreamMapper, type UiStreamMapperOptions } from './mapper.ts';
import { requestToCommands } from './request.ts';
import { AI_SDK_UI_STREAM_HEADERS, UI_STREAM_DONE_FRAME, uiChunkFrame } from './sse.ts';

/**
 * AI SDK UI message stream routes (mounted at /v1/ai-sdk):
 * - POST /chat: what DefaultChatTransport sends; a user message starts a run on the thread (the
 *   chat id), an assistant message answers the run waiting on it. Streams that turn.
 * - GET /chat/:id/stream: useChat({resume: true}) / reconnectToStream: the thread's running
 *   turn replayed from the event log and continued live, or 204 when nothing is streaming.
 *
 * The client's major is `x-baton-ai-sdk-major` (header), `aiSdkMajor` (body or query), else the
 * installed one (7); v6 clients get only chunks and fields v6 knows.
 */
const AI_SDK_MAJOR_HEADER = 'x-baton-ai-sdk-major';

export interface AiSdkRouteOptions {
  /** Agent for a chat whose body names none (default: config PROTOCOL_DEFAULT_AGENT). */
  readonly defaultAgent?: string;
}

function majorOf(req: Request): AiSdkMajor {
  const header = req.headers[AI_SDK_MAJOR_HEADER];
  const fromBody = (req.body as { aiSdkMajor?: unknown } | undefined)?.aiSdkMajor;
  const fromQuery = (req.query as Record<string, unknown>)['aiSdkMajor'];
  const raw = typeof header === 'string' ? header : (fromBody ?? fromQuery);
  if (raw === undefined) return CURRENT_AI_SDK_MAJOR;
  const major = Number(raw);
  if (!SUPPORTED_AI_SDK_MAJORS.includes(major as AiSdkMajor))
    throw badRequest(
      `unsupported AI SDK major ${JSON.stringify(raw)}: use one of ${SUPPORTED_AI_SDK_MAJORS.join(', ')} (${AI_SDK_MAJOR_HEADER} header or aiSdkMajor)`,
    );
  return major as AiSdkMajor;
}

function uiSink(opts: UiStreamMapperOptions): FrameSink {
  const mapper = createUiStreamMapper(opts);
  return {
    map: (event) => mapper.map(event).map(uiChunkFrame),
    end: () => mapper.end().map(uiChunkFrame),
    error: (errorText) => [uiChunkFrame({ type: 'error', errorText })],
    get done() {
      return mapper.done;
    },
    trailer: UI_STREAM_DONE_FRAME,
  };
}

/** Events of the turn in progress start after the run's last suspension. */
function turnStart(events: readonly RunEvent[]): number {
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const e = events[i]!;
    if (e.type === 'run.finished' && e.status === 'waiting') return i + 1;
  }
  return 0;
}

export function aiSdkRouter(ctx: ApiContext, opts: AiSdkRouteOptions = {}): RequestHandler {
  const router = Router();
  const defaultAgent = opts.defaultAgent ?? ctx.config.PROTOCOL_DEFAULT_AGENT;

  router.post('/chat', async (req, res) => {
    const { tenantId } = principalOf(req);
    const major = majorOf(req);
    const body: unknown = req.body;
    if (body === undefined)
      throw badRequest('this route needs a JSON body: send Content-Type: application/json');
    const threadId = threadIdOf((body as { id?: unknown }).id);
    const thread = threadId === null ? null : await loadThread(ctx, tenantId, threadId);
    // Invalid bodies (including a bad chat id) are refused here with the standard JSON error.
    const command = requestToCommands(body, thread?.pending ?? null, { defaultAgent });

    if (command.kind === 'start') {
      const runId = await startRun(ctx, tenantId, command);
      const stream = await RunStream.attach(ctx, tenantId, runId, 0);
      stream.open(res, AI_SDK_UI_STREAM_HEADERS, uiSink({ major, messageId: runId }));
      return;
    }

    // Answer the waiting run: attach first so the first resumed event reaches this response.
    const history = thread?.active?.events ?? [];
    const afterSeq = history.at(-1)?.seq ?? 0;
    const stream = await RunStream.attach(ctx, tenantId, command.runId, afterSeq);
    try {
      await submitToThread(ctx, tenantId, thread, command);
    } catch (error) {
      await stream.detach();
      throw error;
    }
    stream.open(
      res,
      AI_SDK_UI_STREAM_HEADERS,
      uiSink({ major, messageId: command.messageId, history }),
    );
  });

  router.get('/chat/:id/stream', async (req, res) => {
    const { tenantId } = principalOf(req);
    const major = majorOf(req);
    const threadId = parseId(req.params['id'], 'chat id');
    const thread = await loadThread(ctx, tenantId, threadId);
    const active = thread.active;
    // core's one idle predicate: a run waiting under batch_all_suspended with only some calls
    // decided is idle too (nothing streams until the rest are decided).
    if (active === null || activityOf(active.checkpoint) !== 'active') {
      res.status(204).end();
      return;
    }
    // The client resets its assistant message on the first `start` of a resumed stream and
    // rebuilds it from what follows (the SDK's replay semantics), so replay the whole run, the
    // turns before the last suspension included, then continue live.
    const replayedThroughSeq = active.events[turnStart(active.events) - 1]?.seq ?? 0;
    const stream = await RunStream.attach(ctx, tenantId, active.runId, 0);
    stream.open(
      res,
      AI_SDK_UI_STREAM_HEADERS,
      uiSink({ major, messageId: active.runId, replayedThroughSeq }),
    );
  });

  return router;
}
