import type { UIMessageChunk } from 'ai';

/**
 * AI SDK majors whose UI message stream this adapter speaks. 7 is the installed `ai`; 6 is the
 * previous major, still common in deployed frontends (`useChat` from @ai-sdk/react 2.x/3.x).
 */
export type AiSdkMajor = 6 | 7;
export const CURRENT_AI_SDK_MAJOR: AiSdkMajor = 7;
export const SUPPORTED_AI_SDK_MAJORS: readonly AiSdkMajor[] = [6, 7];

/** The chunk union of the installed (current) major; v6 chunks are a subset of it. */
export type UiChunk = UIMessageChunk;
export type UiFinishReason = NonNullable<Extract<UiChunk, { type: 'finish' }>['finishReason']>;

const PM = 'providerMetadata';
const TOOL_META = ['providerExecuted', PM, 'toolMetadata', 'dynamic'] as const;

/**
 * Chunk types and their fields per major, transcribed from each major's `UIMessageChunk` /
 * `uiMessageChunkSchema` (ai@6.0.x and ai@7.0.x). Both schemas are loose objects, so an unknown
 * field would pass validation and be ignored; an unknown chunk TYPE fails the whole union and
 * breaks the client's stream. `downgradeChunk` therefore drops unknown types and strips unknown
 * fields so a client only ever sees what its major defines.
 */
const V6_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'text-start': ['id', PM],
  'text-delta': ['id', 'delta', PM],
  'text-end': ['id', PM],
  'reasoning-start': ['id', PM],
  'reasoning-delta': ['id', 'delta', PM],
  'reasoning-end': ['id', PM],
  error: ['errorText'],
  'tool-input-start': ['toolCallId', 'toolName', 'inputEncoding', ...TOOL_META, 'title'],
  'tool-input-delta': ['toolCallId', 'inputTextDelta'],
  'tool-input-available': ['toolCallId', 'toolName', 'input', ...TOOL_META, 'title'],
  'tool-input-error': ['toolCallId', 'toolName', 'input', ...TOOL_META, 'errorText', 'title'],
  'tool-approval-request': [
    'approvalId',
    'toolCallId',
    'approvalDescriptor',
    'inputSchemaInput',
    'signature',
  ],
  'tool-output-available': ['toolCallId', 'output', ...TOOL_META, 'preliminary'],
  'tool-output-error': ['toolCallId', 'errorText', ...TOOL_META],
  'tool-output-denied': ['toolCallId'],
  'source-url': ['sourceId', 'url', 'title', PM],
  'source-document': ['sourceId', 'mediaType', 'title', 'filename', PM],
  file: ['url', 'mediaType', PM],
  'start-step': [],
  'finish-step': [],
  start: ['messageId', 'messageMetadata'],
  finish: ['finishReason', 'messageMetadata'],
  abort: ['reason'],
  'message-metadata': ['messageMetadata'],
};

const V7_FIELDS: Readonly<Record<string, readonly string[]>> = {
  ...V6_FIELDS,
  'text-end': ['id', 'citations', PM],
  'tool-approval-request': [
    'approvalId',
    'toolCallId',
    'approvalDescriptor',
    'inputSchemaInput',
    'reason',
    'isAutomatic',
    'signature',
  ],
  'tool-approval-response': ['approvalId', 'approved', 'reason', 'providerExecuted', PM],
  custom: ['kind', PM],
  'reasoning-file': ['url', 'mediaType', PM],
  'steering-message': ['id', 'parts'],
  'reset-step': [],
};

export const CHUNK_FIELDS: Readonly<
  Record<AiSdkMajor, Readonly<Record<string, readonly string[]>>>
> = {
  6: V6_FIELDS,
  7: V7_FIELDS,
};

/** Finish reasons per major (`interrupted` is new in 7). */
const FINISH_REASONS: Readonly<Record<AiSdkMajor, readonly UiFinishReason[]>> = {
  6: ['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other'],
  7: ['stop', 'length', 'content-filter', 'tool-calls', 'error', 'interrupted', 'other'],
};

/**
 * The chunk as `major` understands it: null when the type is unknown there; fields it does not
 * define are stripped; a finish reason it lacks becomes 'other'.
 */
export function downgradeChunk(major: AiSdkMajor, chunk: UiChunk): UiChunk | null {
  if (chunk.type.startsWith('data-')) return chunk;
  const fields = CHUNK_FIELDS[major][chunk.type];
  if (fields === undefined) return null;
  const out: Record<string, unknown> = { type: chunk.type };
  for (const [key, value] of Object.entries(chunk)) {
    if (key !== 'type' && value !== undefined && fields.includes(key)) out[key] = value;
  }
  if (
    chunk.type === 'finish' &&
    chunk.finishReason !== undefined &&
    !FINISH_REASONS[major].includes(chunk.finishReason)
  )
    out['finishReason'] = 'other';
  return out as UiChunk;
}
