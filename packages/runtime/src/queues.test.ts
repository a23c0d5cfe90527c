import { describe, expect, it } from 'vitest';
import {
  STEP_QUEUE,
  TOOL_QUEUE,
  agentQueuePart,
  childQueueOf,
  queueLayout,
  stepQueueName,
  toolQueueName,
} from './queues.ts';
import { shardQueueName } from './queue-shards.ts';

describe('per-agent queue names (the layout before shards, still drained)', () => {
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
});

describe('queue layouts', () => {
  it('tell shard queues from the step and tool queues of earlier layouts', () => {
    expect(queueLayout(shardQueueName('default', 2, 4))).toBe('shard');
    expect(queueLayout(STEP_QUEUE)).toBe('step');
    expect(queueLayout(TOOL_QUEUE)).toBe('tool');
    expect(queueLayout(stepQueueName('a:b'))).toBe('step');
    expect(queueLayout(toolQueueName('assistant'))).toBe('tool');
    expect(queueLayout('stepsX')).toBeNull();
    expect(queueLayout('other')).toBeNull();
  });

  it("put tool children in their parent's slot: the shard itself, or the paired tool queue", () => {
    const shard = shardQueueName('default', 1, 16);
    expect(childQueueOf(shard)).toBe(shard);
    expect(childQueueOf(stepQueueName('assistant'))).toBe(toolQueueName('assistant'));
    expect(childQueueOf(STEP_QUEUE)).toBe(TOOL_QUEUE);
  });
});
