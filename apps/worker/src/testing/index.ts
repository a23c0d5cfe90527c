// Built-in agent sets (demo, matrix, children) for tests: not part of the SDK entry. The bench
// agents live in the private @baton/testing workspace.
export { loadAgents } from '../agents.ts';
