import { z } from 'zod';

/**
 * BATON_FAIRNESS (docs/fairness.md): the admission windows of fairness keys and the run limits
 * of tenants, one JSON document the API and the workers must agree on; `off` turns admission off
 * (every run is enqueued at once; priorities still order the queues).
 *
 *   {"window": 16,
 *    "tenants": {"*":    {"maxRuns": 200},
 *                "acme": {"maxRuns": 50, "maxRunsPerKey": 10, "weights": {"gold": 2, "*": 1}}}}
 *
 * A key's window (its runs in progress at most) is round(weight × window), at least 1, at most
 * the tenant's maxRunsPerKey. "*" is the entry of a tenant (or key) not named. `window: 0`: keys
 * have no window (only the tenants' limits hold runs back).
 *
 * A tenant's runs in progress over all its keys are at most its maxRuns, else `tenantWindow`
 * (default: `window`). Fairness keys are the tenant's to invent (often its end users): a window
 * per key alone bounds nothing once a tenant spreads its runs over as many keys as it likes.
 *
 * Unset: DEFAULT_WINDOW per key and per tenant. The API cannot see the pool, so the default is
 * sized for the smallest default pool, one worker: a quarter of its WORKER_CONCURRENCY (256 on
 * 64-bit Node), where model calls and sequential tools run. A flooding key then holds at most a
 * quarter of one worker's step slots and queues no step ahead of another key's, and one key alone
 * keeps 64 runs in flight: its runs/s with short steps are those without admission (bench
 * `fairness`, single key). Slow tools of parallel-mode agents run in TOOL_CONCURRENCY (32) slots,
 * which 64 runs can fill: there another key's tool call may wait about two of them.
 */
/** The window of a key of weight 1 when BATON_FAIRNESS does not set one (see above). */
export const DEFAULT_WINDOW = 64;

/** BATON_FAIRNESS's value that turns admission off. */
const OFF = 'off';

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
  window: z.number().int().min(0).max(100_000).default(DEFAULT_WINDOW),
  /**
   * Runs in progress a tenant whose entry sets no maxRuns may have over all its keys; default:
   * `window`; 0: none.
   */
  tenantWindow: z.number().int().min(0).max(1_000_000).optional(),
  tenants: z.record(z.string(), TenantEntrySchema).default({}),
  /**
   * Whether a key over its window may borrow the live pool's idle capacity while no other key of
   * its tenant waits (docs/fairness.md, "Borrowing"). Default: true when `window` is not set
   * (the default window is sized for the smallest pool), false when it is (an operator's window).
   */
  borrow: z.boolean().optional(),
});
export type FairnessSettings = z.infer<typeof FairnessSettingsSchema> & {
  /** BATON_FAIRNESS=off: no admission at all. */
  readonly off?: true;
};

/** The settings of BATON_FAIRNESS (unset or empty: the defaults; `off`: none); throws what to fix. */
export function parseFairness(raw: string | undefined): FairnessSettings {
  if (raw === undefined || raw.trim() === '')
    return { ...FairnessSettingsSchema.parse({}), borrow: true };
  if (raw.trim().toLowerCase() === OFF)
    return { window: 0, tenantWindow: 0, tenants: {}, off: true };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(
      'BATON_FAIRNESS must be off or JSON, e.g. {"window":16,"tenants":{"*":{"maxRuns":100}}}',
    );
  }
  const parsed = FairnessSettingsSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(
      `BATON_FAIRNESS: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  const windowSet = typeof json === 'object' && json !== null && 'window' in json;
  return { ...parsed.data, borrow: parsed.data.borrow ?? !windowSet };
}

/** What admission enforces for one key of one tenant (Infinity: no limit). */
export interface KeyLimits {
  /** Runs of the key in progress at most. */
  readonly keyLimit: number;
  /** Runs of the tenant in progress at most. */
  readonly tenantLimit: number;
  readonly weight: number;
  /**
   * Whether the limits that bind are windows that may be borrowed past (BATON_FAIRNESS's
   * `borrow`), never an operator's maxRuns or maxRunsPerKey.
   */
  readonly borrowable: boolean;
}

export class FairnessPolicy {
  readonly settings: FairnessSettings;
  /** See `enabled`. */
  private readonly limited: boolean;

  constructor(settings: FairnessSettings) {
    this.settings = settings;
    this.limited =
      settings.off !== true &&
      (settings.window > 0 ||
        this.tenantWindow > 0 ||
        Object.values(settings.tenants).some(
          (t) => t.maxRuns !== undefined || t.maxRunsPerKey !== undefined,
        ));
  }

  /** Whether runs go through admission at all: a window or a run limit is configured. */
  get enabled(): boolean {
    return this.limited;
  }

  /** Runs in progress of a tenant without maxRuns over all its keys (0: no limit). */
  private get tenantWindow(): number {
    return this.settings.tenantWindow ?? this.settings.window;
  }

  limits(tenantId: string, key: string): KeyLimits {
    const { tenants, window } = this.settings;
    const entry = tenants[tenantId] ?? tenants['*'] ?? {};
    const weight = entry.weights?.[key] ?? entry.weights?.['*'] ?? 1;
    const windowed = window > 0 ? Math.max(1, Math.round(weight * window)) : Infinity;
    const tenantWindow = this.tenantWindow > 0 ? this.tenantWindow : Infinity;
    return {
      keyLimit: Math.min(windowed, entry.maxRunsPerKey ?? Infinity),
      tenantLimit: entry.maxRuns ?? tenantWindow,
      weight,
      borrowable:
        this.settings.borrow === true &&
        entry.maxRuns === undefined &&
        entry.maxRunsPerKey === undefined,
    };
  }

  /**
   * Whether a key gets series of its own in /metrics (and its own dispatch counter): the
   * tenant's default key and the keys its entry names. Every other key is one the tenant
   * invented, counted under "*" only, so neither Redis nor a scrape grows with them.
   */
  tracked(tenantId: string, key: string): boolean {
    if (key === tenantId) return true;
    const { tenants } = this.settings;
    const weights = (tenants[tenantId] ?? tenants['*'])?.weights;
    return key !== '*' && weights !== undefined && Object.hasOwn(weights, key);
  }

  /** The tracked keys of a tenant besides its default key (its entry's weights). */
  namedKeys(tenantId: string): string[] {
    const { tenants } = this.settings;
    const weights = (tenants[tenantId] ?? tenants['*'])?.weights ?? {};
    return Object.keys(weights).filter((k) => k !== '*' && k !== tenantId);
  }
}
