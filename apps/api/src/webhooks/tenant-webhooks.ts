import { readFileSync } from 'node:fs';
import { WebhookUrlSchema } from '@baton/protocol';
import { webhookSecretKey, type TenantWebhook } from '@baton/runtime/internal';
import { ConfigError, splitEntries } from '../config.ts';

const TENANT_RE = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Tenant-level webhooks from TENANT_WEBHOOKS (comma- or newline-separated) and
 * TENANT_WEBHOOKS_FILE (one per line, # comments): `tenant:whsec_<base64>:https://…`. Every run
 * of the tenant reports to it, besides the run's own webhook. A bad entry stops the API with
 * one line that names it (never echoing the secret).
 */
export function parseTenantWebhooks(
  config: { readonly TENANT_WEBHOOKS: string; readonly TENANT_WEBHOOKS_FILE?: string | undefined },
  read: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): Map<string, TenantWebhook> {
  let fromFile = '';
  if (config.TENANT_WEBHOOKS_FILE) {
    try {
      fromFile = read(config.TENANT_WEBHOOKS_FILE);
    } catch (error) {
      throw new ConfigError(
        `TENANT_WEBHOOKS_FILE: cannot read ${config.TENANT_WEBHOOKS_FILE} (${(error as NodeJS.ErrnoException).code ?? 'error'}); point it at a readable file or unset it`,
      );
    }
  }
  const out = new Map<string, TenantWebhook>();
  for (const entry of [...splitEntries(config.TENANT_WEBHOOKS), ...splitEntries(fromFile)]) {
    const first = entry.indexOf(':');
    const second = first < 0 ? -1 : entry.indexOf(':', first + 1);
    const tenant = first < 0 ? entry : entry.slice(0, first);
    if (first <= 0 || second < 0)
      throw new ConfigError(
        `TENANT_WEBHOOKS: an entry must look like tenant:whsec_<base64>:https://… (the entry of "${tenant}" does not)`,
      );
    const secret = entry.slice(first + 1, second);
    const url = entry.slice(second + 1);
    if (!TENANT_RE.test(tenant))
      throw new ConfigError(
        `TENANT_WEBHOOKS: tenant "${tenant}" may only contain letters, digits, ".", "_" and "-"`,
      );
    try {
      webhookSecretKey(secret);
    } catch (error) {
      throw new ConfigError(
        `TENANT_WEBHOOKS: the secret of tenant "${tenant}": ${(error as Error).message}; generate one with node -e "console.log('whsec_'+require('crypto').randomBytes(32).toString('base64'))"`,
      );
    }
    if (!WebhookUrlSchema.safeParse(url).success)
      throw new ConfigError(
        `TENANT_WEBHOOKS: the URL of tenant "${tenant}" is not an absolute http:// or https:// URL`,
      );
    if (out.has(tenant))
      throw new ConfigError(`TENANT_WEBHOOKS: tenant "${tenant}" is listed twice; keep one entry`);
    out.set(tenant, { url, secret });
  }
  return out;
}
