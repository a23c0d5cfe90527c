import {
  ApiKeyListSchema,
  CreatedApiKeySchema,
  type ApiKeyView,
  type CreateApiKeyRequest,
  type CreatedApiKey,
} from '@baton/protocol';
import type { RequestOptions, Transport } from './transport.ts';

const enc = encodeURIComponent;

/** Tenant API keys managed at run time (admin key only): `/v1/admin/keys`. */
export class AdminKeysApi {
  private readonly t: Transport;
  constructor(transport: Transport) {
    this.t = transport;
  }

  /** `POST /v1/admin/keys` (201): the secret is in this answer only. */
  async create(request: CreateApiKeyRequest, opts: RequestOptions = {}): Promise<CreatedApiKey> {
    return (
      await this.t.json('POST', '/v1/admin/keys', CreatedApiKeySchema, { ...opts, body: request })
    ).body;
  }

  /** `GET /v1/admin/keys`: every managed key (of one tenant), never a secret. */
  async list(
    query: { readonly tenant?: string } = {},
    opts: RequestOptions = {},
  ): Promise<ApiKeyView[]> {
    return (
      await this.t.json('GET', '/v1/admin/keys', ApiKeyListSchema, { ...opts, query: { ...query } })
    ).body.keys;
  }

  /** `POST /v1/admin/keys/:id/rotate` (201): a new key; the old one works `graceSeconds` more. */
  async rotate(
    keyId: string,
    request: { readonly graceSeconds?: number } = {},
    opts: RequestOptions = {},
  ): Promise<CreatedApiKey> {
    return (
      await this.t.json('POST', `/v1/admin/keys/${enc(keyId)}/rotate`, CreatedApiKeySchema, {
        ...opts,
        body: request,
      })
    ).body;
  }

  /** `DELETE /v1/admin/keys/:id` (204): refused by every API within a second. */
  async revoke(keyId: string, opts: RequestOptions = {}): Promise<void> {
    await this.t.noContent('DELETE', `/v1/admin/keys/${enc(keyId)}`, opts);
  }
}
