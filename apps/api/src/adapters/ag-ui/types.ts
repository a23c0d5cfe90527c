import type { AGUIEvent, Interrupt, JsonPatchOperation, Message, TokenUsage } from '@ag-ui/core';

/**
 * AG-UI events as they travel: @ag-ui/core types its `type` with a TypeScript enum; on the wire
 * it is the enum's string value. Deriving the wire shape from the library types (type-only
 * imports) keeps the adapter free of a runtime dependency on @ag-ui/core.
 */
type Wire<E> = E extends { type: infer T extends string }
  ? Omit<E, 'type'> & { type: `${T}` }
  : never;

export type AgUiEvent = Wire<AGUIEvent>;
export type AgUiEventType = AgUiEvent['type'];
export type AgUiEventOf<T extends AgUiEventType> = Extract<AgUiEvent, { type: T }>;
export type AgUiMessage = Message;
export type AgUiInterrupt = Interrupt;
export type AgUiPatchOperation = JsonPatchOperation;
export type AgUiTokenUsage = TokenUsage;
