// npm's postinstall for the repository. Plain JavaScript on purpose: it must run on whatever Node
// npm finds (the system's 20.17+ included) even when the project's own Node 24 did not install.
//
// `npm install` on Node 20 prints an EBADENGINE warning for each dependency that declares Node 22+
// (the AI SDK, OpenTelemetry, vitest, commander, undici, testcontainers, eventsource-parser). Read
// alone they say "unsupported"; they are not: npm scripts run everything on the project's Node 24
// (the `node` dev dependency, node_modules/.bin first on PATH), and the packages are tested on the
// system Node (test/integration/sdk-pack.test.ts). npm has no setting that silences only these
// warnings (engine-strict=false is the default and still warns), so this says what they mean.

import console from 'node:console';
import process from 'node:process';

const agent = process.env['npm_config_user_agent'] ?? '';
const version = /\bnode\/(v(\d+)[\d.]*)/.exec(agent);
const major = version ? Number(version[2]) : 0;

if (version && major < 22) {
  console.log(
    [
      '',
      `baton: npm ran on Node ${version[1]}. The "EBADENGINE Unsupported engine"`,
      'warnings above are dependencies that declare Node 22+. Nothing to do: `npm start`, `npm test`',
      "and the other npm scripts run on the project's own Node 24 (node_modules/.bin/node), and",
      'the packages themselves run on Node 20.17+ (tested). See docs/development.md, "Node".',
      '',
    ].join('\n'),
  );
}
