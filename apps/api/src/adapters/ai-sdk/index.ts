export * from './chunks.ts';
export * from './mapper.ts';
export * from './request.ts';
export * from './sse.ts';
