export * from './input.ts';
export * from './interrupts.ts';
export * from './mapper.ts';
export * from './sse.ts';
export type * from './types.ts';
