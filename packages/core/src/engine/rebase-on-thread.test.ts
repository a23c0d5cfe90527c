import { describe, expect, it } from 'vitest';
import type { Checkpoint, Message } from '@baton/protocol';
import { rebaseOnThread } from './lifecycle.ts';

const msg = (id: string): Message => ({ id, role: 'user', content: id });

function created(history: Message[], own: Message[]): Checkpoint {
  return {
    status: 'created',
    messages: [...history, ...own],
    historyLength: history.length,
    state: { run: {}, thread: {} },
  } as unknown as Checkpoint;
}

describe('rebaseOnThread', () => {
  it('keeps the very message objects when the thread has not moved', () => {
    const cp = created([msg('h1'), msg('h2')], [msg('u1')]);
    // the thread as loaded again: equal messages, other objects
    const rebased = rebaseOnThread(cp, [msg('h1'), msg('h2')], { k: 1 });
    expect(rebased.messages).toBe(cp.messages);
    expect(rebased.state.thread).toEqual({ k: 1 });
  });

  it('takes the thread as it is now when it moved', () => {
    const cp = created([msg('h1')], [msg('u1')]);
    const rebased = rebaseOnThread(cp, [msg('h1'), msg('h2')], {});
    expect(rebased.messages.map((m) => m.id)).toEqual(['h1', 'h2', 'u1']);
    expect(rebased.historyLength).toBe(2);
  });
});
