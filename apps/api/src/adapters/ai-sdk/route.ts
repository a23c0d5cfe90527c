import { activityOf } from '@baton/core';
import type { RunEvent } from '@baton/protocol';
import { Router, type Request, type RequestHandler } from 'express';
import { principalOf } from '../../auth.ts';
import type { ApiContext } from '../../context.ts';
import { parseId } from '../../validation.ts';
import {
  RunStream,
  fairnessHeaders,
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
import {
  commonErrors,
  error,
  eventStream,
  ref,
  threadIdParam,
  type OpenApiPaths,
} from '../../openapi/shared.ts';

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
      const runId = await startRun(
        ctx,
        tenantId,
        command,
        fairnessHeaders(req.headers),
        req.principal,
      );
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

/** OpenAPI paths of aiSdkRouter, mounted at AI_SDK_PATH. */
export const aiSdkPaths: OpenApiPaths = {
  '/v1/ai-sdk/chat': {
    post: {
      tags: ['protocols'],
      operationId: 'aiSdkChat',
      summary: 'AI SDK chat (DefaultChatTransport): start a run or answer the waiting one',
      description:
        'The chat id is the thread. A last user message starts a run; a last assistant message with approval-responded / output-available tool parts answers the run waiting on the thread. The client major is the x-baton-ai-sdk-major header or body aiSdkMajor (6 or 7, default 7); the agent is body agent (default: PROTOCOL_DEFAULT_AGENT).',
      parameters: [
        {
          name: 'x-baton-ai-sdk-major',
          in: 'header',
          required: false,
          schema: { type: 'string', enum: ['6', '7'] },
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('AiSdkChatRequest') } },
      },
      responses: {
        '200': eventStream(
          'UI message stream (header x-vercel-ai-ui-message-stream: v1): data: <chunk JSON> frames, then data: [DONE]',
        ),
        ...commonErrors,
        '409': error('thread_busy, or a decision conflict'),
        '422': error('unknown_agent or payload_invalid'),
      },
    },
  },
  '/v1/ai-sdk/chat/{id}/stream': {
    get: {
      tags: ['protocols'],
      operationId: 'aiSdkResumeStream',
      summary: "Resume the chat's streaming turn (useChat resume / reconnectToStream)",
      parameters: [{ ...threadIdParam, description: 'Chat (thread) id' }],
      responses: {
        '200': eventStream('The turn in progress, replayed from the event log, then live'),
        '204': { description: 'Nothing is streaming on this chat' },
        ...commonErrors,
      },
    },
  },
};
