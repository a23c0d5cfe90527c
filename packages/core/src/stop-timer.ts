/**
 * The reason a timer's AbortController is aborted with once the work it timed has settled. A
 * shared value: `abort()` without a reason builds a DOMException (with a stack trace) on every
 * model call and tool call, which showed up in the worker's CPU profile; nobody reads this one.
 */
const SETTLED = new Error('timer stopped: the work it timed has settled');

/** Cancels the timer behind `controller` (its sleep rejects with a reason nobody reads). */
export function stopTimer(controller: AbortController): void {
  controller.abort(SETTLED);
}
