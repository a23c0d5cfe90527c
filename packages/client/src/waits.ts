import {
  SendEventResponseSchema,
  WaitpointCreatedSchema,
  WaitpointOutcomeSchema,
  type JsonValue,
  type SendEventRequest,
  type SendEventResponse,
  type WaitpointCreated,
  type WaitpointOutcome,
} from '@baton/protocol';
import type { RequestOptions, Transport } from './transport.ts';

/** Events that resume the calls waiting for them (`baton_wait_for_event`). */
export class EventsApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /**
   * `POST /v1/events`: resumes every of the tenant's calls waiting for this name and key, each
   * once; an event nobody waits for resumes nothing and is not kept.
   */
  async send(event: SendEventRequest, opts: RequestOptions = {}): Promise<SendEventResponse> {
    return (
      await this.t.json('POST', '/v1/events', SendEventResponseSchema, { ...opts, body: event })
    ).body;
  }
}

/** The token of a waitpoint URL (`/w/<token>`, absolute or not), or the token itself. */
function tokenOf(urlOrToken: string): string {
  const match = /\/(?:w|v1\/waitpoints)\/([^/?#]+)/.exec(urlOrToken);
  return match ? match[1]! : urlOrToken;
}

/** Waitpoints: URLs that complete one waiting call without an API key. */
export class WaitpointsApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /** `POST /v1/runs/:id/calls/:callId/waitpoint`: the URL (and token), shown this once. */
  async create(
    runId: string,
    toolCallId: string,
    opts: RequestOptions & { readonly expiresInMs?: number } = {},
  ): Promise<WaitpointCreated> {
    const { expiresInMs, ...request } = opts;
    return (
      await this.t.json(
        'POST',
        `/v1/runs/${encodeURIComponent(runId)}/calls/${encodeURIComponent(toolCallId)}/waitpoint`,
        WaitpointCreatedSchema,
        { ...request, body: expiresInMs === undefined ? {} : { expiresInMs } },
      )
    ).body;
  }

  /**
   * `POST /w/:token`: completes the waitpoint's call with `payload` (the token is the
   * credential; the client's key, if any, is not needed). A repeat answers the first outcome.
   */
  async complete(
    urlOrToken: string,
    payload?: JsonValue,
    opts: RequestOptions = {},
  ): Promise<WaitpointOutcome> {
    return (
      await this.t.json(
        'POST',
        `/w/${encodeURIComponent(tokenOf(urlOrToken))}`,
        WaitpointOutcomeSchema,
        { ...opts, ...(payload === undefined ? {} : { body: payload }) },
      )
    ).body;
  }
}
