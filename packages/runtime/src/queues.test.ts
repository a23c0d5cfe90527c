import { describe, expect, it } from 'vitest';
import {
  STEP_QUEUE,
  TOOL_QUEUE,
  agentQueuePart,
  queueKind,
  stepQueueName,
  toolQueueName,
} from './queues.ts';

describe('per-agent queue names', () => {
  it('keep plain agent names readable', () => {
    expect(stepQueueName('assistant')).toBe('steps.assistant');
    expect(toolQueueName('parallel-assistant')).toBe('tools.parallel-assistant');
  });

  it('never contain the ":" BullMQ forbids, and stay distinct for names that sanitize alike', () => {
    const names = ['a b', 'a_b', 'a:b', 'a.b', 'ops/deploy', 'ünïcode', 'x'.repeat(128)];
    const parts = names.map(agentQueuePart);
    for (const part of parts) {
      expect(part).not.toContain(':');
      expect(part).not.toContain('.');
    }
    expect(new Set(parts).size).toBe(names.length);
    expect(agentQueuePart('a b')).toMatch(/^a_b~[0-9a-f]{10}$/);
  });

  it('tell step queues from tool queues, legacy ones included', () => {
    expect(queueKind(STEP_QUEUE)).toBe('step');
    expect(queueKind(TOOL_QUEUE)).toBe('tool');
    expect(queueKind(stepQueueName('a:b'))).toBe('step');
    expect(queueKind(toolQueueName('assistant'))).toBe('tool');
    expect(queueKind('stepsX')).toBeNull();
    expect(queueKind('other')).toBeNull();
  });
});
