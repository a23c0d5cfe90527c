#!/usr/bin/env node
// In the repository Node 24 runs the TypeScript sources directly (type stripping). The packed
// package ships no sources but a bundle, dist/baton.js (`npm pack` builds it), because Node does
// not strip types under node_modules.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const sources = new URL('../src/main.ts', import.meta.url);
await import(
  existsSync(sources) ? sources.href : new URL('../dist/baton.js', import.meta.url).href
);
