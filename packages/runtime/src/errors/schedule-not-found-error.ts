import { BatonError } from '@baton/protocol';

export class ScheduleNotFoundError extends BatonError<'not_found'> {
  constructor(scheduleId: string) {
    super('not_found', `schedule ${scheduleId} was not found`);
  }
}
