import { defineConfig } from 'vite';

/**
 * `npm pack` bundles the CLI into one ES module (dist/baton.js) with every dependency inside:
 * Node does not strip types under node_modules, and the workspace packages it uses
 * (@baton/client, @baton/protocol) are not published.
 */
export default defineConfig({
  root: import.meta.dirname,
  build: {
    ssr: 'src/main.ts',
    outDir: 'dist',
    emptyOutDir: true,
    target: 'node22',
    minify: false,
    sourcemap: false,
    rolldownOptions: { output: { entryFileNames: 'baton.js', format: 'es' } },
  },
  ssr: { noExternal: true, target: 'node' },
});
