export * from './create-worker.ts';
export * from './config.ts';
export * from './reconciler.ts';
export * from './worker.ts';
