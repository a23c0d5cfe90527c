import { createInterface, type Interface } from 'node:readline/promises';
import type { BatonClient } from '@baton/client';
import { isApiError } from '@baton/client';
import type { AwaitedToolCall, DecisionInput, JsonObject, JsonValue } from '@baton/protocol';
import { coerceField, fieldPrompt, payloadForm, FieldInputError } from '@baton/client';
import type { Style } from './render.ts';

export interface PromptIo {
  readonly stdin: NodeJS.ReadableStream;
  readonly stdout: NodeJS.WritableStream;
}

async function askUntil<T>(
  rl: Interface,
  question: string,
  parse: (answer: string) => T,
  io: PromptIo,
  style: Style,
): Promise<T> {
  for (;;) {
    const answer = await rl.question(question);
    try {
      return parse(answer);
    } catch (error) {
      if (!FieldInputError.isInstance(error)) throw error;
      io.stdout.write(`  ${style.red(error.message)}\n`);
    }
  }
}

/** Asks the fields of the call's responseSchema; undefined when the ticket wants no payload. */
async function askPayload(
  rl: Interface,
  call: AwaitedToolCall,
  io: PromptIo,
  style: Style,
): Promise<JsonValue | undefined> {
  const form = payloadForm(call.responseSchema);
  if (form.fields.length === 0) return undefined;
  if (!form.object)
    return askUntil(
      rl,
      fieldPrompt(form.fields[0]!),
      (a) => coerceField(form.fields[0]!, a),
      io,
      style,
    );
  const payload: JsonObject = {};
  for (const field of form.fields) {
    const value = await askUntil(rl, fieldPrompt(field), (a) => coerceField(field, a), io, style);
    if (value !== undefined) payload[field.name] = value;
  }
  return payload;
}

function yesNo(answer: string): boolean {
  if (/^(y|yes)$/i.test(answer.trim())) return true;
  if (/^(n|no)$/i.test(answer.trim())) return false;
  throw new FieldInputError('answer y or n');
}

/** A descendant's call is decided through the watched run, naming the run that holds it. */
function target(call: AwaitedToolCall): { runId?: string } {
  return call.runId === undefined ? {} : { runId: call.runId };
}

/**
 * Asks a person about every call the run waits on (approve? then the payload form) and sends
 * the decisions. A payload the API refuses (payload_invalid) is asked again with its message.
 */
export async function promptDecisions(
  client: BatonClient,
  runId: string,
  calls: readonly AwaitedToolCall[],
  io: PromptIo,
  style: Style,
  signal: AbortSignal,
): Promise<void> {
  const rl = createInterface({ input: io.stdin, output: io.stdout, terminal: true });
  const onAbort = (): void => rl.close();
  signal.addEventListener('abort', onAbort, { once: true });
  // Ctrl-C while a question is open: stop the whole command, like anywhere else.
  rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  try {
    for (;;) {
      const decisions: DecisionInput[] = [];
      for (const call of calls) {
        io.stdout.write(
          `\n${style.yellow('?')} ${style.bold(call.toolName)} ${style.dim(call.toolCallId)}${call.runId === undefined ? '' : style.dim(` in child run ${call.runId}`)} — ${call.message}\n`,
        );
        if (call.parameters !== undefined)
          io.stdout.write(`  ${style.dim(JSON.stringify(call.parameters))}\n`);
        const approve = await askUntil(rl, `  Approve? [y/n] `, yesNo, io, style);
        if (!approve) {
          decisions.push({ ...target(call), toolCallId: call.toolCallId, action: 'cancel' });
          continue;
        }
        const payload = await askPayload(rl, call, io, style);
        decisions.push({
          ...target(call),
          toolCallId: call.toolCallId,
          action: 'resume',
          ...(payload === undefined ? {} : { payload }),
        });
      }
      try {
        const result = await client.runs.decide(runId, decisions, { signal });
        io.stdout.write(
          style.dim(`  sent ${result.accepted.length} decision(s); run is ${result.status}\n`),
        );
        return;
      } catch (error) {
        if (!isApiError(error, 'payload_invalid')) throw error;
        io.stdout.write(`  ${style.red(`the API refused the payload: ${error.message}`)}\n`);
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    rl.close();
  }
}
