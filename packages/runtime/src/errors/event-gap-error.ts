import { BatonError } from '@baton/protocol';

export class EventGapError extends BatonError<'event_gap'> {
  constructor(runId: string, from: number, to: number) {
    super('event_gap', `run ${runId}: events ${from}..${to} are no longer in the stream`);
  }
}
