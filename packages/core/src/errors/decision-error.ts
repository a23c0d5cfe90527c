import { BatonError } from '@baton/protocol';

/** A decision the run cannot take; the code says why (call_unknown, decision_conflict, ...). */
export class DecisionError extends BatonError {}
