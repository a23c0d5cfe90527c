import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { WebhookTargetPolicy } from '@baton/runtime/internal';
import { isBatonError } from '@baton/protocol';

/** What one POST to a receiver came to. */
export interface PostOutcome {
  /** The receiver's status, when it answered. */
  readonly statusCode?: number;
  readonly retryAfter?: string;
  /** Why there is no answer (timeout, connection error). */
  readonly error?: string;
  /** The target resolved to an address the policy refuses (not sent). */
  readonly refused?: string;
}

// The policy's lookup throws it from inside node:http, so it arrives as the request's error.
function isRefusal(error: unknown): boolean {
  return isBatonError(error) && error.code === 'webhook_target_refused';
}

/**
 * POSTs `body` once. The connection goes to the address the policy checked (its `lookup`), a
 * redirect is not followed (it is an answer like any other non-2xx), and the whole attempt
 * (connect, send, response headers) must fit in `timeoutMs`. The answer's body is discarded.
 */
export function postWebhook(
  target: string,
  headers: Readonly<Record<string, string>>,
  body: string,
  opts: { readonly timeoutMs: number; readonly policy: WebhookTargetPolicy },
): Promise<PostOutcome> {
  return new Promise<PostOutcome>((resolve) => {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      resolve({ error: 'the webhook URL is not a valid URL' });
      return;
    }
    const literal = opts.policy.literalRefusal(url);
    if (literal) {
      resolve({ refused: literal.message });
      return;
    }
    let settled = false;
    const finish = (outcome: PostOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: opts.policy.lookup,
        // A fresh connection per attempt: no pooled socket to an address checked long ago.
        agent: false,
      },
      (res) => {
        const retryAfter = res.headers['retry-after'];
        finish({
          statusCode: res.statusCode ?? 0,
          ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
        });
        res.resume();
        // A receiver that never ends its answer must not hold the socket.
        setTimeout(() => req.destroy(), opts.timeoutMs).unref();
      },
    );
    const timer = setTimeout(() => {
      finish({ error: `timeout: no answer within ${opts.timeoutMs} ms` });
      req.destroy();
    }, opts.timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (isRefusal(error)) finish({ refused: error.message });
      else finish({ error: error.code ? `${error.code}: ${error.message}` : error.message });
    });
    req.end(body);
  });
}
