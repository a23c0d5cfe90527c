import { useEffect } from 'preact/hooks';

/** How often a page re-reads what it shows: runs, schedules and deliveries go on while it is open. */
const POLL_MS = 2_000;

/**
 * Calls `load` now, and again POLL_MS after each call ends (calls never overlap), until `deps`
 * change or the page goes, which aborts the request in flight. An error other than that abort
 * goes to `onError`; polling stops when it returns true (the key was refused: the page asks
 * for another).
 */
export function usePolling(
  load: (signal: AbortSignal) => Promise<void>,
  onError: (error: unknown) => boolean | void,
  deps: readonly unknown[],
): void {
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async (): Promise<void> => {
      try {
        await load(controller.signal);
      } catch (e) {
        if (controller.signal.aborted || onError(e) === true) return;
      }
      timer = setTimeout(() => void tick(), POLL_MS);
    };
    void tick();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, deps);
}
