import { IdSchema } from '@baton/protocol';
import { Router, type RequestHandler } from 'express';
import { principalOf } from '../../auth.ts';
import type { ApiContext } from '../../context.ts';
import {
  RunStream,
  fairnessHeaders,
  loadThread,
  sendFrames,
  startRun,
  submitToThread,
  threadIdOf,
  type FrameSink,
} from '../run-stream.ts';
import { parseBody } from '../../validation.ts';
import { AgUiRunInputSchema, inputToCommands, runErrorFor } from './input.ts';
import { createAgUiMapper, type AgUiMapperOptions } from './mapper.ts';
import { AG_UI_SSE_HEADERS, agUiFrame } from './sse.ts';
import { commonErrors, error, eventStream, ref, type OpenApiPaths } from '../../openapi/shared.ts';

/**
 * AG-UI route (mounted at /v1/ag-ui): POST / takes a RunAgentInput and answers with the AG-UI
 * run as SSE. A user message starts a Baton run on the thread; `resume` entries answer the
 * interrupts of the run waiting on it (the same Baton run continues). Valid inputs AG-UI cannot
 * serve (e.g. no resume while interrupts are pending) are a RUN_ERROR stream; failures of the
 * request itself (a malformed input, auth, thread busy, unknown agent, a refused decision) are
 * the standard JSON error.
 */
export interface AgUiRouteOptions {
  /** Agent for an input whose forwardedProps names none (default: config PROTOCOL_DEFAULT_AGENT). */
  readonly defaultAgent?: string;
}

const RouteInputSchema = AgUiRunInputSchema.extend({ threadId: IdSchema });

function agUiSink(opts: AgUiMapperOptions): FrameSink {
  const mapper = createAgUiMapper(opts);
  return {
    map: (event) => mapper.map(event).map(agUiFrame),
    end: () => mapper.end().map(agUiFrame),
    error: (message) => [agUiFrame({ type: 'RUN_ERROR', message, code: 'internal' })],
    get done() {
      return mapper.done;
    },
  };
}

export function agUiRouter(ctx: ApiContext, opts: AgUiRouteOptions = {}): RequestHandler {
  const router = Router();
  const defaultAgent = opts.defaultAgent ?? ctx.config.PROTOCOL_DEFAULT_AGENT;

  router.post('/', async (req, res) => {
    const { tenantId } = principalOf(req);
    // A body that is not a RunAgentInput is the client's bug, answered like every other bad
    // input (400 JSON naming each field); RUN_ERROR is for valid inputs AG-UI cannot serve.
    const input = parseBody(RouteInputSchema, req);
    const raw = input as { threadId?: unknown; forwardedProps?: { agent?: unknown } };
    const threadId = threadIdOf(raw.threadId);
    const thread = threadId === null ? null : await loadThread(ctx, tenantId, threadId);
    const named = raw.forwardedProps?.agent;
    const agent = typeof named === 'string' && named !== '' ? named : defaultAgent;
    const command = inputToCommands(input, thread?.pending ?? null, { agent });

    if (command.kind === 'error') {
      sendFrames(res, AG_UI_SSE_HEADERS, [agUiFrame(runErrorFor(command))]);
      return;
    }
    const base = {
      threadId: command.threadId,
      runId: command.protocolRunId,
      threadMessages: thread?.messages ?? [],
      state: thread?.state ?? {},
    };

    if (command.kind === 'start') {
      const runId = await startRun(
        ctx,
        tenantId,
        command,
        fairnessHeaders(req.headers),
        req.principal,
      );
      const stream = await RunStream.attach(ctx, tenantId, runId, 0);
      stream.open(res, AG_UI_SSE_HEADERS, agUiSink(base));
      return;
    }

    // Resume: attach first so the first resumed event reaches this response, then decide.
    const history = thread?.active?.events ?? [];
    const stream = await RunStream.attach(ctx, tenantId, command.runId, history.at(-1)?.seq ?? 0);
    try {
      await submitToThread(ctx, tenantId, thread, command);
    } catch (error) {
      await stream.detach();
      throw error;
    }
    stream.open(res, AG_UI_SSE_HEADERS, agUiSink({ ...base, history }));
  });

  return router;
}

/** OpenAPI paths of agUiRouter, mounted at AG_UI_PATH. */
export const agUiPaths: OpenApiPaths = {
  '/v1/ag-ui': {
    post: {
      tags: ['protocols'],
      operationId: 'agUiRun',
      summary: 'AG-UI (HttpAgent): run the agent, or resume its interrupts',
      description:
        'A user message starts a run on the thread (agent: forwardedProps.agent, default PROTOCOL_DEFAULT_AGENT); resume entries answer the pending interrupts. Inputs AG-UI cannot serve are a RUN_ERROR event.',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('AgUiRunAgentInput') } },
      },
      responses: {
        '200': eventStream('AG-UI events as SSE: data: <event JSON> frames (no [DONE])'),
        ...commonErrors,
        '409': error('thread_busy, or a decision conflict'),
        '422': error('unknown_agent or payload_invalid'),
      },
    },
  },
};
