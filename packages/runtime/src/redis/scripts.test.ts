import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { commandName } from './command-name.ts';
import { defineScript, defineVariadicScript } from './scripts.ts';

// Never connects: registering a command is client-side (ioredis keeps the SHA and the name).
const client = new Redis({ lazyConnect: true });
afterAll(() => client.disconnect());

const commands = client as unknown as Record<string, unknown>;

describe('defineScript names every script from its source', () => {
  it('registers the command as <base>_<sha1(source) prefix>, never under the bare base', () => {
    defineScript(client, 'batonScriptsTestA', 1, 'return 1');
    expect(typeof commands[commandName('batonScriptsTestA', 'return 1')]).toBe('function');
    expect(commandName('batonScriptsTestA', 'return 1')).toBe('batonScriptsTestA_e0e1f9fa');
    expect(commands['batonScriptsTestA']).toBeUndefined();
  });

  it('gives a changed source a new command: the old name is never reused for it', () => {
    defineScript(client, 'batonScriptsTestB', 1, 'return 1');
    defineScript(client, 'batonScriptsTestB', 1, 'return 2');
    const one = commandName('batonScriptsTestB', 'return 1');
    const two = commandName('batonScriptsTestB', 'return 2');
    expect(one).not.toBe(two);
    expect(typeof commands[one]).toBe('function');
    expect(typeof commands[two]).toBe('function');
  });

  it('names variadic scripts the same way', () => {
    defineVariadicScript(client, 'batonScriptsTestC', 'return 3');
    expect(typeof commands[commandName('batonScriptsTestC', 'return 3')]).toBe('function');
    expect(commands['batonScriptsTestC']).toBeUndefined();
  });
});
