import { z } from 'zod';

/**
 * What a Baton token (or an identity provider's token) lets its bearer do, one string each:
 *
 * - `run:read:<runId>`: read the run (snapshot, events, its protocol stream).
 * - `run:decide:<runId>`: answer the run's suspended calls (needs nothing else to read it).
 * - `thread:read:<threadId>`: read the thread and every run on it.
 * - `thread:run:<threadId>`: start the next run (chat turn) on the thread, and answer its runs.
 * - `agent:start:<agent>`: start one run of the agent (tokens with it are one-use by default).
 * - `runs:own`: read, decide and list the runs whose owner is the token's subject.
 * - `runs:start`: start runs of any agent the tenant allows, owned by the token's subject.
 *
 * A credential without scopes (a tenant API key) may do everything its tenant may.
 */
const ID = '[A-Za-z0-9._:-]{1,128}';
const SCOPE_RE = new RegExp(
  `^(?:run:(?:read|decide):${ID}|thread:(?:read|run):${ID}|agent:start:[A-Za-z0-9._:-]{1,128}|runs:own|runs:start)$`,
);

/** At most this many scopes in one token (a header stays small). */
const MAX_TOKEN_SCOPES = 32;

export const ScopeSchema = z
  .string()
  .regex(
    SCOPE_RE,
    'a scope is run:read:<runId>, run:decide:<runId>, thread:read:<threadId>, thread:run:<threadId>, agent:start:<agent>, runs:own or runs:start',
  );
type Scope = z.infer<typeof ScopeSchema>;

export type ParsedScope =
  | { readonly kind: 'run:read' | 'run:decide'; readonly runId: string }
  | { readonly kind: 'thread:read' | 'thread:run'; readonly threadId: string }
  | { readonly kind: 'agent:start'; readonly agent: string }
  | { readonly kind: 'runs:own' | 'runs:start' };

/** The scope's parts, or null for a string that is not a scope. */
export function parseScope(scope: string): ParsedScope | null {
  if (!SCOPE_RE.test(scope)) return null;
  if (scope === 'runs:own' || scope === 'runs:start') return { kind: scope };
  const [a, b] = scope.split(':', 2) as [string, string];
  const rest = scope.slice(a.length + b.length + 2);
  const kind = `${a}:${b}`;
  if (kind === 'run:read' || kind === 'run:decide') return { kind, runId: rest };
  if (kind === 'thread:read' || kind === 'thread:run') return { kind, threadId: rest };
  return { kind: 'agent:start', agent: rest };
}

export const runReadScope = (runId: string): Scope => `run:read:${runId}`;
export const runDecideScope = (runId: string): Scope => `run:decide:${runId}`;
export const threadReadScope = (threadId: string): Scope => `thread:read:${threadId}`;
export const threadRunScope = (threadId: string): Scope => `thread:run:${threadId}`;

/** Whether a token with these scopes is one-use unless its request says otherwise. */
export function oneUseByDefault(scopes: readonly string[]): boolean {
  return scopes.some((s) => s.startsWith('agent:start:'));
}

/** POST /v1/tokens: what the token may do, for whom, and for how long. */
export const MintTokenRequestSchema = z.strictObject({
  scopes: z
    .array(ScopeSchema)
    .min(1)
    .max(MAX_TOKEN_SCOPES)
    .describe('What the token allows (see docs/http-api.md, Tokens).'),
  subject: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe('The end user the token acts for (its `sub`); runs it starts are owned by them.'),
  expiresIn: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Lifetime in seconds (default 900; at most TOKEN_MAX_TTL_SECONDS).'),
  oneUse: z
    .boolean()
    .optional()
    .describe('Accepted for one request only (default: true with an agent:start scope).'),
});
export type MintTokenRequest = z.infer<typeof MintTokenRequestSchema>;

export const MintTokenResponseSchema = z.object({
  token: z.string().describe('The JWT; send it as Authorization: Bearer <token>.'),
  tokenId: z.string().describe('Its `jti`, to revoke it.'),
  expiresAt: z.number().int().describe('Expiry, ms since the epoch.'),
  scopes: z.array(ScopeSchema),
  subject: z.string().optional(),
  oneUse: z.boolean(),
});
export type MintTokenResponse = z.infer<typeof MintTokenResponseSchema>;

/** POST /v1/tokens/revoke: one token by id, or every token of a subject issued until now. */
export const RevokeTokensRequestSchema = z.union([
  z.strictObject({ tokenId: z.string().min(1).max(128).describe('The `jti` to revoke.') }),
  z.strictObject({
    subject: z
      .string()
      .min(1)
      .max(256)
      .describe('Revoke every token of this subject issued so far.'),
  }),
]);
export type RevokeTokensRequest = z.infer<typeof RevokeTokensRequestSchema>;
