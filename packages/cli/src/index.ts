export * from './exit-codes.ts';
export { createCli, type CliIo } from './program.ts';
