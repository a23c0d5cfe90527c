import { DEFAULT_PRIORITY, type QueuedInfo } from '@baton/protocol';
import type { RedisRunStore } from './redis/redis-run-store.ts';
import type { RunAdmission } from './fairness/run-admission.ts';

/** A listed run's priority, fairness key and, while it waits for a slot, where (GET /v1/runs). */
export interface RunAdmissionView {
  readonly priority: number;
  readonly fairnessKey: string;
  readonly queued?: QueuedInfo;
}

/** Admission as a list of runs shows it (GET /v1/runs, its `admission=queued` filter). */
export class RunAdmissionViews {
  private readonly store: RedisRunStore;
  private readonly admission: RunAdmission | undefined;

  constructor(store: RedisRunStore, admission: RunAdmission | undefined) {
    this.store = store;
    this.admission = admission;
  }

  /**
   * Priority, fairness key and admission of the unfinished runs of a page of one tenant's runs,
   * by run id: one read of each run's fields and one of the tenant's admission state for the
   * page. Finished runs are left out: admission is over for them, and a list must answer the
   * same whether a finished run is read from Redis or from the archive.
   */
  async of(tenantId: string, runIds: readonly string[]): Promise<Map<string, RunAdmissionView>> {
    const metas = await Promise.all(runIds.map((id) => this.store.meta(id)));
    const views = new Map<string, RunAdmissionView>();
    const open: { runId: string; fairnessKey: string }[] = [];
    runIds.forEach((runId, i) => {
      const meta = metas[i];
      if (!meta || meta.tenantId !== tenantId || meta.status === 'done') return;
      const fairnessKey = meta.fairnessKey ?? tenantId;
      views.set(runId, { priority: meta.priority ?? DEFAULT_PRIORITY, fairnessKey });
      open.push({ runId, fairnessKey });
    });
    const queued =
      (await this.admission?.queuedMany(tenantId, open)) ?? new Map<string, QueuedInfo>();
    for (const [runId, info] of queued) {
      const view = views.get(runId);
      if (view) views.set(runId, { ...view, queued: info });
    }
    return views;
  }

  /** The ids of the tenant's runs that wait for a slot (GET /v1/runs?admission=queued). */
  async parked(tenantId: string): Promise<Set<string>> {
    return (await this.admission?.parkedRuns(tenantId)) ?? new Set();
  }
}
