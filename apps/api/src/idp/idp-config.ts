import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../config.ts';

/**
 * A tenant's own identity provider (issue 35): JWTs its users already hold are accepted when
 * their `iss` is a configured issuer, verified against the provider's JWKS. From IDP_TENANTS (a
 * JSON array) and IDP_TENANTS_FILE (a file holding one); each issuer belongs to one tenant.
 */

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

const JwksUrlSchema = z.url().refine(
  (value) => {
    const url = new URL(value);
    return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname));
  },
  { message: 'must be https:// (http:// only for localhost / 127.0.0.1)' },
);

export const IdpTenantSchema = z.strictObject({
  tenant: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'letters, digits, ".", "_" and "-" only'),
  /** Exactly the `iss` of the provider's tokens (e.g. "https://acme.eu.auth0.com/"). */
  issuer: z.string().min(1).max(512),
  jwksUrl: JwksUrlSchema,
  /** The `aud` its tokens must carry for Baton (one of them, when a list). */
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  /** Asymmetric algorithms only: a shared secret would let anyone holding it mint users. */
  algorithms: z.array(z.enum(ALGORITHMS)).min(1).default(['RS256', 'ES256']),
  /** Claim holding the end user (the runs' owner). */
  subjectClaim: z.string().min(1).default('sub'),
  /** Claim holding Baton scopes: a space-separated string (`scope`) or an array (`permissions`). */
  scopesClaim: z.string().min(1).default('scope'),
  /** Stripped from each scope before it is read (e.g. "baton:" for "baton:runs:own"). */
  scopePrefix: z.string().default(''),
  /** Scopes of a token whose scopes claim holds no Baton scope: the user's own runs. */
  defaultScopes: z.array(z.string().min(1)).default(['runs:own', 'runs:start']),
  /** Agents its users may start (`runs:start`); ["*"]: every agent. Default: none. */
  allowedAgents: z.array(z.string().min(1)).default([]),
  /** At most one JWKS fetch per this many seconds for tokens signed with an unknown key. */
  jwksCooldownSeconds: z.number().min(0).max(3_600).default(5),
  /** Keys are fetched again after this long even when every key is known. */
  jwksMaxAgeSeconds: z.number().min(1).default(600),
  /** Leeway for exp / nbf / iat between the provider's clock and Baton's. */
  clockToleranceSeconds: z.number().int().min(0).max(300).default(30),
});
export type IdpTenant = z.infer<typeof IdpTenantSchema>;

const IdpTenantsSchema = z.array(IdpTenantSchema);

function parseList(text: string, where: string): IdpTenant[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ConfigError(
      `${where}: not JSON; give an array of {tenant, issuer, jwksUrl, audience, …}`,
    );
  }
  const parsed = IdpTenantsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${where}: [${issue.path.join('.')}] ${issue.message}`);
  }
  return parsed.data;
}

/** Every tenant's identity provider from IDP_TENANTS and IDP_TENANTS_FILE (none: []). */
export function idpTenants(config: {
  IDP_TENANTS: string;
  IDP_TENANTS_FILE?: string | undefined;
}): IdpTenant[] {
  const list: IdpTenant[] = [];
  if (config.IDP_TENANTS.trim() !== '') list.push(...parseList(config.IDP_TENANTS, 'IDP_TENANTS'));
  if (config.IDP_TENANTS_FILE) {
    let text: string;
    try {
      text = readFileSync(config.IDP_TENANTS_FILE, 'utf8');
    } catch (error) {
      throw new ConfigError(
        `IDP_TENANTS_FILE: cannot read ${config.IDP_TENANTS_FILE} (${(error as NodeJS.ErrnoException).code ?? 'error'}); point it at a readable file or unset it`,
      );
    }
    list.push(...parseList(text, 'IDP_TENANTS_FILE'));
  }
  const issuers = new Set<string>();
  for (const t of list) {
    if (issuers.has(t.issuer))
      throw new ConfigError(
        `IDP_TENANTS: issuer "${t.issuer}" is configured twice; a token's issuer must name one tenant`,
      );
    issuers.add(t.issuer);
  }
  return list;
}
