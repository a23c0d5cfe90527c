/** `baton` entry: parses process.argv, maps the outcome to an exit code (see exit-codes.ts). */
import { EXIT } from './exit-codes.ts';
import { createCli } from './program.ts';

const controller = new AbortController();
process.once('SIGINT', () => controller.abort(new Error('interrupted')));
process.once('SIGTERM', () => controller.abort(new Error('terminated')));

const cli = createCli({
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  signal: controller.signal,
});
const code = await cli.run(process.argv.slice(2));
process.exitCode = controller.signal.aborted ? EXIT.interrupted : code;
// Open handles (a half-read stream after Ctrl-C, keep-alive sockets) must not keep us alive.
setImmediate(() => process.exit());
