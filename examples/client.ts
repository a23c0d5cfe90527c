/**
 * The typed client against a running Baton (`npm start` prints the URL and a key):
 *
 *   BATON_API_KEY=<the key npm start printed> npm run example:client
 *   BATON_URL=http://localhost:3001 BATON_API_KEY=… npm run example:client   # another port
 *
 * It starts a run of the demo `assistant`, streams it until it waits for the deploy approval,
 * approves every waiting call, streams the rest and prints how the run ended. `npm run` runs it on
 * the project's Node 24 whatever your Node is. In your own project: install the packed packages
 * (`npm run pack:packages` here, then `npm install <path>/baton-protocol-*.tgz
 * <path>/baton-client-*.tgz` there) and import the same names; the client runs on Node 20.17+.
 */
import { BatonClient, isApiError, isClientError } from '@baton/client';

// `npm start` listens on PORT (default 3000) and prints its URL: BATON_URL wins, else that port.
const baseUrl = process.env['BATON_URL'] ?? `http://localhost:${process.env['PORT'] ?? '3000'}`;
const apiKey = process.env['BATON_API_KEY'];
if (apiKey === undefined || apiKey === '') {
  console.error(
    'example:client needs an API key: BATON_API_KEY=<the key npm start printed> npm run example:client',
  );
  process.exit(1);
}
const baton = new BatonClient({ baseUrl, apiKey });

// What goes wrong before the run starts is the setup, not the example: say so in one line.
process.on('uncaughtException', (error) => {
  if (isClientError(error, 'network'))
    console.error(
      `example:client cannot reach Baton at ${baseUrl} (${error.message}). Is \`npm start\` running? If it listens elsewhere, set BATON_URL to the URL it printed (or PORT to its port).`,
    );
  else if (isApiError(error, 'unauthorized'))
    console.error(
      `example:client: Baton at ${baseUrl} refused the key (${error.message}); use the key npm start printed.`,
    );
  else console.error(error);
  process.exit(1);
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
