import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyChild } from './lazy-logger.ts';

function capture(level: string): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level }, sink), lines };
}

describe('lazyChild', () => {
  it('logs with the bindings, like a child made up front', async () => {
    const { log, lines } = capture('info');
    const child = lazyChild(log, { step: 3, plan: 'infer' });
    child.info({ extra: 1 }, 'hello');
    child.warn('again');
    await new Promise((r) => setImmediate(r));
    expect(lines).toMatchObject([
      { step: 3, plan: 'infer', extra: 1, msg: 'hello', level: 30 },
      { step: 3, plan: 'infer', msg: 'again', level: 40 },
    ]);
    expect(child.isLevelEnabled('debug')).toBe(false);
    expect(child.level).toBe('info');
  });

  it('makes no child for a call at a level the parent does not log, or for no call at all', () => {
    const { log } = capture('info');
    let made = 0;
    const child = log.child.bind(log);
    log.child = ((...args: Parameters<typeof log.child>) => {
      made += 1;
      return child(...args);
    }) as typeof log.child;
    lazyChild(log, { step: 1 });
    lazyChild(log, { step: 2 }).debug('not logged');
    expect(made).toBe(0);
    const lazy = lazyChild(log, { step: 3 });
    lazy.info('logged');
    lazy.info('logged again');
    expect(made).toBe(1);
  });
});
