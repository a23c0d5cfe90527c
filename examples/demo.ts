/**
 * In-process demo: one run of the demo assistant, whose deploy tool needs a human approval.
 * It prints every event of the run as it happens, then approves (asks you when run in a terminal).
 *
 *   npm run example:demo
 *
 * (`npm run` runs it on the project's Node 24, which runs TypeScript as it is, whatever your Node
 * is; `node examples/demo.ts` works as well with Node 24 on PATH.)
 */
import { createInterface } from 'node:readline/promises';
import { InProcessRunner } from '@baton/core';
import { createDemoAgents } from '@baton/core/testing';
import type { RunEvent } from '@baton/protocol';
import { systemClock } from '@baton/runtime';

const runner = new InProcessRunner({ agents: createDemoAgents(systemClock), clock: systemClock });

function describe(e: RunEvent): string {
  switch (e.type) {
    case 'text.delta':
      return JSON.stringify(e.delta);
    case 'message.assistant':
      return `assistant: ${e.message.content}${e.message.toolCalls.length ? ` (+${e.message.toolCalls.length} tool calls)` : ''}`;
    case 'tool_call.created':
      return `${e.toolName}(${JSON.stringify(e.arguments)})`;
    case 'tool_call.status':
      return `${e.toolName}: ${e.from} -> ${e.to}`;
    case 'tool_call.suspended':
      return `${e.toolName} waits: ${e.ticket.message}`;
    case 'tool_call.result':
      return `${e.toolName}: ${JSON.stringify(e.outcome)}`;
    case 'run.status':
      return `${e.from} -> ${e.to}`;
    case 'run.finished':
      return `${e.status} (${e.termination.kind}), ${e.usage.totalTokens} tokens`;
    default:
      return '';
  }
}

runner.onEvent((e) => {
  console.log(`#${String(e.seq).padStart(3)} ${e.type.padEnd(20)} ${describe(e)}`);
});

const { runId, finished } = await runner.start({
  agent: 'assistant',
  input: [{ role: 'user', content: 'Please deploy the checkout service to production.' }],
});
console.log(`run ${runId} started (sequential mode, approval-gated deploy)\n`);

for (;;) {
  const cp = await Promise.race([finished, new Promise<null>((r) => setTimeout(r, 50, null))]);
  if (cp) break;
  const current = await runner.checkpoint(runId);
  if (current?.status !== 'waiting') continue;
  const call = Object.values(current.calls).find((c) => c.status === 'suspended');
  if (!call) continue;
  let approve = true;
  if (process.stdin.isTTY) {
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    const answer = await rl.question(`\n${call.ticket?.message ?? 'Approve?'} [Y/n] `);
    rl.close();
    approve = !/^n/i.test(answer.trim());
  } else {
    console.log(`\n(no terminal: approving "${call.ticket?.message}" automatically)\n`);
  }
  await runner.submitDecisions(runId, [
    { decisionId: `demo-${call.id}`, toolCallId: call.id, action: approve ? 'resume' : 'cancel' },
  ]);
}
const cp = await finished;
const last = cp.messages.at(-1);
console.log(`\nfinal answer: ${last?.role === 'assistant' ? last.content : '(none)'}`);
