// Built-in agent sets (demo, matrix, bench) for tests and benchmarks: not part of the SDK entry.
export { loadAgents } from '../agents.ts';
export { benchAgents } from '../bench-agents.ts';
