import { z } from 'zod';

/**
 * Tenant API keys managed at run time (admin routes /v1/admin/keys, `baton keys`): created,
 * listed, rotated with a grace period and revoked without a restart. The secret is shown once,
 * in the answer that creates it; it is stored only as its SHA-256 hash.
 */

/** Longest grace a rotation may give the old key (30 days). */
const MAX_KEY_GRACE_SECONDS = 30 * 86_400;
/** Longest lifetime a created key may be given (10 years). */
const MAX_KEY_TTL_SECONDS = 3_650 * 86_400;

const TenantNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,128}$/, 'letters, digits, ".", "_" and "-" only (1-128)');

export const CreateApiKeyRequestSchema = z.strictObject({
  tenant: TenantNameSchema,
  /** A label for people (e.g. "ci", "billing service"); not secret. */
  name: z.string().min(1).max(128).optional(),
  /** The key stops working this many seconds after creation; absent: until revoked. */
  expiresInSeconds: z.number().int().min(1).max(MAX_KEY_TTL_SECONDS).optional(),
});
export type CreateApiKeyRequest = z.infer<typeof CreateApiKeyRequestSchema>;

export const RotateApiKeyRequestSchema = z.strictObject({
  /** How long the old key keeps working (default 1 h; 0: it stops at once). */
  graceSeconds: z.number().int().min(0).max(MAX_KEY_GRACE_SECONDS).optional(),
});

export const ApiKeyStatusSchema = z.enum(['active', 'grace', 'expired']);

/** A managed key as listed: never the secret nor its hash. */
export const ApiKeyViewSchema = z.object({
  id: z.string(),
  tenant: z.string(),
  name: z.string().optional(),
  createdAt: z.number().int(),
  /** When it stops working (ms since epoch): its expiry, or the end of a rotation's grace. */
  expiresAt: z.number().int().optional(),
  /** Last authenticated request, to the minute (absent: never used). */
  lastUsedAt: z.number().int().optional(),
  /** The key that replaced it (set by rotate). */
  rotatedTo: z.string().optional(),
  status: ApiKeyStatusSchema,
});
export type ApiKeyView = z.infer<typeof ApiKeyViewSchema>;

/** The answer to create and rotate: the view and, this once, the secret. */
export const CreatedApiKeySchema = ApiKeyViewSchema.extend({ key: z.string() });
export type CreatedApiKey = z.infer<typeof CreatedApiKeySchema>;

export const ApiKeyListSchema = z.object({ keys: z.array(ApiKeyViewSchema) });
