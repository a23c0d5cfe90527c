import { z } from 'zod';

/**
 * Agent versions (docs/deployment-and-scaling.md "Deploying a new agent version"): every agent a
 * worker serves has a version, given (`version` in its definition) or derived from its content;
 * a run keeps the version it was created on and its jobs go only to workers that serve it.
 */

/** Letters, digits, '.', '_', '-' (no ':' or '@': versions are parts of Redis keys and fields). */
export const AgentVersionSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._-]+$/, 'may only contain letters, digits, ".", "_" and "-" (at most 64)');

/**
 * 'pinned' (default): a run's every step runs on the version it was created on.
 * 'auto-upgrade': each next step of a run goes to the agent's current version (for changes
 * known to be compatible with runs in flight).
 */
export const VersioningSchema = z.enum(['pinned', 'auto-upgrade']);
export type Versioning = z.infer<typeof VersioningSchema>;

/** What a worker advertises about one version of an agent it serves (HASH field agent\nversion). */
export const AgentVersionAdvertSchema = z.object({
  agent: z.string(),
  version: z.string(),
  versioning: VersioningSchema,
  /** The task queue its workers serve it on: where producers put this version's jobs. */
  taskQueue: z.string(),
  /** When a worker first advertised it (ms): "newest" is the latest first seen. */
  firstSeen: z.number(),
  updatedAt: z.number(),
});
export type AgentVersionAdvert = z.infer<typeof AgentVersionAdvertSchema>;

/** One version of an agent as GET /v1/agents shows it. */
export const AgentVersionInfoSchema = z.object({
  version: z.string(),
  versioning: VersioningSchema,
  firstSeen: z.number(),
  /** Workers serving it now (heartbeat current). */
  workers: z.array(z.string()),
  /** Runs created on it that have not finished, and of those the ones waiting (a human, or a worker of the version). */
  runs: z.object({
    inProgress: z.number().int().nonnegative(),
    waiting: z.number().int().nonnegative(),
    /** Waiting for a live worker of this version (queued.reason 'version_unavailable'). */
    versionUnavailable: z.number().int().nonnegative(),
  }),
  /** Whether new runs get it. */
  current: z.boolean(),
});
export type AgentVersionInfo = z.infer<typeof AgentVersionInfoSchema>;

/** POST /v1/agents/:name/promote (admin keys). */
export const PromoteAgentVersionRequestSchema = z.object({ version: AgentVersionSchema }).strict();
export type PromoteAgentVersionRequest = z.infer<typeof PromoteAgentVersionRequestSchema>;

/** Reply of promote and rollback: the version new runs get from now on. */
export const AgentCurrentVersionSchema = z.object({
  agent: z.string(),
  currentVersion: z.string(),
  /** The version current before this change (null: the default, newest live). */
  previousVersion: z.string().nullable(),
});
export type AgentCurrentVersion = z.infer<typeof AgentCurrentVersionSchema>;
