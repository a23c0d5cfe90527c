import { Command } from 'ioredis';

interface TimedCommand {
  isSettled: boolean;
  _commandTimeoutTimer?: ReturnType<typeof setTimeout>;
  reject(error: Error): void;
}

let installed = false;

/**
 * ioredis' `commandTimeout` rejects a command when its timer fires. A timer due while this
 * process's event loop was busy (a request's CPU work on a loaded host) fires in the loop's timers
 * phase, before the poll phase reads the sockets: a command whose reply had arrived in time was
 * rejected ("Command timed out", a 503) because of the API's own stall, not Redis' (issue 32: a
 * busy, healthy cluster answered 503 at the API's 500 ms cluster command timeout). Here the timer
 * only decides after one more poll phase (setImmediate runs after it): a reply already on the
 * socket settles the command first. A command Redis really did not answer still fails, a poll
 * phase later. The reply of a command that timed out still reaches it (ioredis keeps it in its
 * connection's reply queue), so replies stay paired with their commands.
 * Process-wide (ioredis builds its commands itself), installed once by connection.ts.
 */
export function installCommandTimeoutAfterPoll(): void {
  if (installed) return;
  installed = true;
  (Command.prototype as unknown as { setTimeout(ms: number): void }).setTimeout = function (
    this: TimedCommand,
    ms: number,
  ): void {
    if (this._commandTimeoutTimer) return;
    this._commandTimeoutTimer = setTimeout(() => {
      setImmediate(() => {
        if (!this.isSettled) this.reject(new Error('Command timed out'));
      });
    }, ms);
  };
}
