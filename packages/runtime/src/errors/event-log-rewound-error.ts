import { BatonError } from '@baton/protocol';

/** What a listener was told when the log it followed turned out rewound. */
export interface EventLogRewound {
  /** The last seq delivered to the listener. */
  readonly delivered: number;
  /** The log's last seq when the rewind was seen (its events after a lost suffix are new). */
  readonly lastSeq: number;
}

export class EventLogRewoundError extends BatonError<'event_log_rewound'> {
  constructor(runId: string, rewound: EventLogRewound) {
    super(
      'event_log_rewound',
      `run ${runId}: the event log no longer holds the events delivered up to seq ${String(rewound.delivered)} (it ends at ${String(rewound.lastSeq)} or differs): Redis lost acknowledged writes`,
    );
  }
}
