import { z } from 'zod';

/**
 * BATON_FAIRNESS (docs/fairness.md): the admission windows of fairness keys and the run limits
 * of tenants, one JSON document the API and the workers must agree on. Unset: no admission, every
 * run is enqueued at once (priorities still order the queues).
 *
 *   {"window": 16,
 *    "tenants": {"*":    {"maxRuns": 200},
 *                "acme": {"maxRuns": 50, "maxRunsPerKey": 10, "weights": {"gold": 2, "*": 1}}}}
 *
 * A key's window (its runs in progress at most) is round(weight × window), at least 1, at most
 * the tenant's maxRunsPerKey. "*" is the entry of a tenant (or key) not named. Size `window` to
 * the step concurrency of the pool (WORKER_CONCURRENCY × workers): a flooding key then fills the
 * workers but queues no job of its own ahead of another key's next step.
 *
 * Why admission is off by default: the right window depends on the pool (the API cannot see its
 * concurrency), and a run holds its slot while it waits for a worker of its agent, so a tenant
 * with runs of an agent nobody serves would hold back its other runs.
 */

const TenantEntrySchema = z.strictObject({
  /** Runs of the tenant in progress at most (a waiting-for-human run does not count). */
  maxRuns: z.number().int().min(1).optional(),
  /** Runs of any one fairness key of the tenant in progress at most. */
  maxRunsPerKey: z.number().int().min(1).optional(),
  /** Weight of each fairness key (the tenant's default key is the tenant id); "*": the others. */
  weights: z.record(z.string(), z.number().positive().max(1000)).optional(),
});

const FairnessSettingsSchema = z.strictObject({
  /** Runs in progress a key of weight 1 may have (its admission window); 0: no window. */
  window: z.number().int().min(0).max(100_000).default(0),
  tenants: z.record(z.string(), TenantEntrySchema).default({}),
});
export type FairnessSettings = z.infer<typeof FairnessSettingsSchema>;

/** The settings of BATON_FAIRNESS (unset or empty: no admission); throws what to fix. */
export function parseFairness(raw: string | undefined): FairnessSettings {
  if (raw === undefined || raw.trim() === '') return FairnessSettingsSchema.parse({});
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(
      'BATON_FAIRNESS must be JSON, e.g. {"window":16,"tenants":{"*":{"maxRuns":100}}}',
    );
  }
  const parsed = FairnessSettingsSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(
      `BATON_FAIRNESS: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** What admission enforces for one key of one tenant (Infinity: no limit). */
export interface KeyLimits {
  /** Runs of the key in progress at most. */
  readonly keyLimit: number;
  /** Runs of the tenant in progress at most. */
  readonly tenantLimit: number;
  readonly weight: number;
}

export class FairnessPolicy {
  readonly settings: FairnessSettings;
  /** See `enabled`. */
  private readonly limited: boolean;

  constructor(settings: FairnessSettings) {
    this.settings = settings;
    this.limited =
      settings.window > 0 ||
      Object.values(settings.tenants).some(
        (t) => t.maxRuns !== undefined || t.maxRunsPerKey !== undefined,
      );
  }

  /** Whether runs go through admission at all: a window or a run limit is configured. */
  get enabled(): boolean {
    return this.limited;
  }

  limits(tenantId: string, key: string): KeyLimits {
    const { tenants, window } = this.settings;
    const entry = tenants[tenantId] ?? tenants['*'] ?? {};
    const weight = entry.weights?.[key] ?? entry.weights?.['*'] ?? 1;
    const windowed = window > 0 ? Math.max(1, Math.round(weight * window)) : Infinity;
    return {
      keyLimit: Math.min(windowed, entry.maxRunsPerKey ?? Infinity),
      tenantLimit: entry.maxRuns ?? Infinity,
      weight,
    };
  }
}
