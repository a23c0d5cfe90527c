import { describe, expect, it } from 'vitest';
import { commandName } from '../redis/command-name.ts';
import { APPEND_EVENTS, GUARD_WRITE } from './lua/functions.ts';
import { APPEND_LUA, COMMIT_LUA, CREATE_LUA } from './lua/run-scripts.ts';

describe('commandName: a script is named after its source', () => {
  it('is the base and the first 8 hex digits of the SHA-1 of the source', () => {
    // sha1('return 1') = e0e1f9fabfc9d4800c877a703b823ac0578ff8db
    expect(commandName('batonX', 'return 1')).toBe('batonX_e0e1f9fa');
  });

  it('changes when the script or a function it includes changes, so old workers keep theirs', () => {
    expect(commandName('batonRunCommit', COMMIT_LUA)).not.toBe(
      commandName('batonRunCommit', COMMIT_LUA.replace(GUARD_WRITE, `${GUARD_WRITE}\n`)),
    );
    expect(commandName('batonRunAppend', APPEND_LUA)).toBe(
      commandName('batonRunAppend', APPEND_LUA),
    );
  });

  it('prepends every shared function a script calls', () => {
    for (const lua of [CREATE_LUA, COMMIT_LUA, APPEND_LUA])
      expect(lua).toContain(APPEND_EVENTS.trim().split('\n')[0]);
  });
});
