/**
 * The typed client against a running Baton (`npm start` prints the URL and a key):
 *
 *   BATON_API_KEY=<the key npm start printed> npm run example:client
 *
 * It starts a run of the demo `assistant`, streams it until it waits for the deploy approval,
 * approves every waiting call, streams the rest and prints how the run ended. `npm run` runs it on
 * the project's Node 24 whatever your Node is. In your own project: install the packed packages
 * (`npm run pack:packages` here, then `npm install <path>/baton-protocol-*.tgz
 * <path>/baton-client-*.tgz` there) and import the same names; the client runs on Node 20.17+.
 */
import { BatonClient, isApiError } from '@baton/client';

const baton = new BatonClient({
  baseUrl: process.env['BATON_URL'] ?? 'http://localhost:3000',
  apiKey: process.env['BATON_API_KEY'],
});

const { runId } = await baton.runs.create({
  agent: 'assistant',
  input: { messages: [{ role: 'user', content: 'deploy please' }] },
});
console.log(`run ${runId}`);
let seen = 0;
for await (const event of baton.runs.stream(runId, { until: 'suspended' })) {
  if (event.type === 'text.delta') process.stdout.write(event.delta);
  seen = event.seq;
}

// Errors are typed: the API's code, its HTTP status and a message that says what to fix (asked
// while the run waits, so the unknown call is the only thing wrong).
try {
  await baton.runs.approve(runId, 'no-such-call');
} catch (error) {
  if (isApiError(error, 'call_unknown')) console.log(error.status, error.code, error.message);
  else throw error;
}

const { await: waiting } = await baton.runs.get(runId);
for (const call of waiting?.calls ?? []) {
  console.log(`\napproving ${call.toolCallId}: ${call.message}`);
  await baton.runs.approve(runId, call.toolCallId, { comment: 'ok' });
}

let status = 'unknown';
for await (const event of baton.runs.stream(runId, { after: seen })) {
  if (event.type === 'text.delta') process.stdout.write(event.delta);
  if (event.type === 'run.finished') status = event.status;
}
console.log(`\nrun ${runId} finished: ${status}`);
