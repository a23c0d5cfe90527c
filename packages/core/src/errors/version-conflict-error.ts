import { BatonError } from '@baton/protocol';

/**
 * A compare-and-set commit found another version than the one it read. Writers retry against a
 * fresh load; one that escapes its retries reaches an API client as 503 `unavailable`.
 */
export class VersionConflictError extends BatonError<'version_conflict'> {
  constructor(runId: string, expected: number, actual: number | null) {
    super(
      'version_conflict',
      `run ${runId}: expected version ${expected}, store has ${actual ?? 'nothing'}`,
    );
  }
}
