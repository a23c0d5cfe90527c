// Demo, matrix and scenario agents for tests, benchmarks and the shipped worker's built-in sets:
// kept out of the main entry so production code does not pull them in by accident.
export { createDemoAgents } from '../demo/demo-agents.ts';
export { childAgents } from './child-agents.ts';
export { MATRIX_CASES, matrixAgents, matrixAgentName, payloadFor } from './scenario-agents.ts';
