export * from './exit-codes.ts';
export { createCli } from './program.ts';
export type { CliIo } from './context.ts';
