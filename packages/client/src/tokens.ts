import {
  MintTokenResponseSchema,
  type MintTokenRequest,
  type MintTokenResponse,
  type RevokeTokensRequest,
} from '@baton/protocol';
import { z } from 'zod';
import type { RequestOptions, Transport } from './transport.ts';

const RevokedSchema = z.object({ revoked: z.unknown() });

const SigningKeysSchema = z.object({
  kid: z.string().optional(),
  keys: z.array(
    z.object({
      kid: z.string(),
      createdAt: z.number(),
      retiredAt: z.number().optional(),
      signing: z.boolean(),
    }),
  ),
});
/** The token signing keys: ids and dates, never key material (admin key). */
export type SigningKeys = z.infer<typeof SigningKeysSchema>;

/**
 * Scoped tokens for end users (docs/http-api.md, Tokens): mint them on your server with the
 * tenant key, hand them to a browser, revoke them when the user signs out.
 */
export class TokensApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /** `POST /v1/tokens` (201): a JWT with these scopes, for this subject, for this long. */
  async mint(request: MintTokenRequest, opts: RequestOptions = {}): Promise<MintTokenResponse> {
    const res = await this.t.json('POST', '/v1/tokens', MintTokenResponseSchema, {
      ...opts,
      body: request,
    });
    return res.body;
  }

  /** `POST /v1/tokens/revoke`: one token (`tokenId`) or every token of a `subject` so far. */
  async revoke(request: RevokeTokensRequest, opts: RequestOptions = {}): Promise<void> {
    await this.t.json('POST', '/v1/tokens/revoke', RevokedSchema, { ...opts, body: request });
  }

  /** `POST /v1/admin/token-keys/rotate` (admin key): a new signing key on every API within 1 s. */
  async rotateSigningKey(opts: RequestOptions = {}): Promise<SigningKeys> {
    return (
      await this.t.json('POST', '/v1/admin/token-keys/rotate', SigningKeysSchema, { ...opts })
    ).body;
  }

  /** `GET /v1/admin/token-keys` (admin key). */
  async signingKeys(opts: RequestOptions = {}): Promise<SigningKeys> {
    return (await this.t.json('GET', '/v1/admin/token-keys', SigningKeysSchema, opts)).body;
  }

  /**
   * The URL of a run's event stream with `token` in the query string, for a browser's
   * EventSource (which cannot send headers); the API reads `access_token` on stream GETs only.
   */
  eventSourceUrl(
    runId: string,
    token: string,
    query: { until?: 'done' | 'suspended' } = {},
  ): string {
    return this.t.url(`/v1/runs/${encodeURIComponent(runId)}/events`, {
      ...query,
      access_token: token,
    });
  }
}
