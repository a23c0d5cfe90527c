import { MAX_EVENT_WAIT_MS } from '@baton/protocol';
import { z } from 'zod';
import { defineTool, toolResult, type ToolDefinition } from './tools.ts';

/** The built-in tool's default name (model APIs allow letters, digits, `_` and `-` only). */
export const WAIT_FOR_EVENT_TOOL = 'baton_wait_for_event';

const WaitForEventInput = z.object({
  name: z.string().min(1).max(200).describe('Event name, e.g. payment.succeeded'),
  key: z.string().min(1).max(500).describe('Correlation key, e.g. order-123'),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(MAX_EVENT_WAIT_MS)
    .describe('Give up after this many milliseconds (required)'),
});

export interface WaitForEventToolOptions {
  /** The name the model sees (default baton_wait_for_event). */
  readonly name?: string;
  readonly description?: string;
}

/**
 * A tool that suspends its call until an event with that name and correlation key is sent to
 * the run's tenant (POST /v1/events), or its timeout passes. The call's result is then
 * `{ event: { name, key, data } }` or `{ timedOut: true, name, key }`. The run holds no worker
 * and no job while it waits (the call is suspended; the runtime indexes the wait).
 */
export function waitForEventTool(
  opts: WaitForEventToolOptions = {},
): ToolDefinition<typeof WaitForEventInput> {
  return defineTool({
    name: opts.name ?? WAIT_FOR_EVENT_TOOL,
    description:
      opts.description ??
      'Wait until an outside system reports an event (name and correlation key), or the timeout passes',
    inputSchema: WaitForEventInput,
    // The event's data (or the timeout) is the call's result: nothing executes again.
    resumeMode: 'use_decision_as_tool_result',
    execute: ({ name, key, timeoutMs }) =>
      Promise.resolve(
        toolResult.pending({
          reason: 'input',
          message: `Waiting for event ${name} with key ${key}`,
          parameters: { name, key, timeoutMs },
          resumeMode: 'use_decision_as_tool_result',
          waitFor: { kind: 'event', name, key, timeoutMs },
        }),
      ),
  });
}
