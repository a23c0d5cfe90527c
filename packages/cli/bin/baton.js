#!/usr/bin/env node
// Node 24 runs the TypeScript sources directly (type stripping); `npm pack` ships a bundled
// dist/baton.js instead, because Node does not strip types under node_modules.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const bundled = new URL('../dist/baton.js', import.meta.url);
await import(existsSync(bundled) ? bundled.href : new URL('../src/main.ts', import.meta.url).href);
