import { defineConfig } from 'vite';

// Served by the API at /console (apps/api/src/console.ts), so every URL is under that base.
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The polyfill would be an inline script, which the console's CSP forbids.
    modulePreload: { polyfill: false },
    sourcemap: true,
  },
  server: {
    // `npm run dev -w @baton/console`: the API on :3000 answers /v1.
    proxy: { '/v1': 'http://localhost:3000' },
  },
});
