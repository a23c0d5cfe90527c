import type { AbstractChat as AbstractChat7, ChatInit, ChatState, ChatStatus, UIMessage } from 'ai';

/**
 * A headless useChat: the SDK's own AbstractChat with a plain in-memory ChatState (what
 * @ai-sdk/react and friends provide with framework state). Works with ai v7 and v6: pass the
 * major's AbstractChat class.
 */
class MemoryState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[];
  constructor(messages: UIMessage[] = []) {
    this.messages = messages;
  }
  pushMessage = (message: UIMessage): void => {
    this.messages = [...this.messages, message];
  };
  popMessage = (): void => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage): void => {
    this.messages = [
      ...this.messages.slice(0, index),
      this.snapshot(message),
      ...this.messages.slice(index + 1),
    ];
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

type ChatClass = abstract new (
  init: Omit<ChatInit<UIMessage>, 'messages'> & { state: ChatState<UIMessage> },
) => AbstractChat7<UIMessage>;

export type HeadlessChat = AbstractChat7<UIMessage>;

export function createHeadlessChat(
  AbstractChat: unknown,
  init: Omit<ChatInit<UIMessage>, 'messages'>,
  /** Messages the page restored (e.g. after a reload), as useChat's initial messages. */
  messages: UIMessage[] = [],
): HeadlessChat {
  const Base = AbstractChat as ChatClass;
  class HeadlessChatImpl extends Base {}
  return new HeadlessChatImpl({ ...init, state: new MemoryState(messages) });
}

/** Polls until `check` holds (bounded). */
export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
