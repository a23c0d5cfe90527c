import type { JsonValue, StatePatch, StateScopes } from '@baton/protocol';
import { StatePatchError } from './errors/state-patch-error.ts';

export type Reducer = 'sum' | 'max' | 'min' | 'append' | 'union';

/**
 * A registered state key. Exclusive keys have one writer per parallel round; commutative keys
 * combine contributions with a reducer, so parallel writers never conflict.
 */
export interface StateKeyDefinition {
  readonly key: string;
  readonly scope: 'run' | 'thread';
  readonly merge: 'exclusive' | 'commutative';
  readonly reducer?: Reducer;
  /** Persistent keys survive the run (thread scope: into the next run on the thread). */
  readonly persistent?: boolean;
  readonly initial?: JsonValue;
}

export type KeyRegistry = ReadonlyMap<string, StateKeyDefinition>;

export function buildKeyRegistry(defs: readonly StateKeyDefinition[]): KeyRegistry {
  const map = new Map<string, StateKeyDefinition>();
  for (const def of defs) {
    if (map.has(def.key)) throw new StatePatchError(`state key "${def.key}" is registered twice`);
    if (def.merge === 'commutative' && def.reducer === undefined)
      throw new StatePatchError(`commutative state key "${def.key}" needs a reducer`);
    map.set(def.key, def);
  }
  return map;
}

export function initialState(
  registry: KeyRegistry,
  thread: Record<string, JsonValue>,
): StateScopes {
  const run: Record<string, JsonValue> = {};
  const threadState: Record<string, JsonValue> = {};
  for (const def of registry.values()) {
    if (def.scope === 'run' && def.initial !== undefined) run[def.key] = def.initial;
    if (def.scope === 'thread') {
      const carried = def.persistent ? thread[def.key] : undefined;
      const value = carried ?? def.initial;
      if (value !== undefined) threadState[def.key] = value;
    }
  }
  return { run, thread: threadState };
}

function reduce(
  reducer: Reducer,
  current: JsonValue | undefined,
  value: JsonValue,
  key: string,
): JsonValue {
  switch (reducer) {
    case 'sum':
    case 'max':
    case 'min': {
      if (typeof value !== 'number')
        throw new StatePatchError(`state key "${key}" reduces numbers`);
      const base = typeof current === 'number' ? current : undefined;
      if (base === undefined) return value;
      return reducer === 'sum'
        ? base + value
        : reducer === 'max'
          ? Math.max(base, value)
          : Math.min(base, value);
    }
    case 'append': {
      const list = Array.isArray(current) ? current : [];
      return [...list, value];
    }
    case 'union': {
      const list = Array.isArray(current) ? current : [];
      const additions = Array.isArray(value) ? value : [value];
      const seen = new Set(list.map((v) => JSON.stringify(v)));
      const out = [...list];
      for (const item of additions) {
        const id = JSON.stringify(item);
        if (!seen.has(id)) {
          seen.add(id);
          out.push(item);
        }
      }
      return out;
    }
  }
}

/** Applies patches in order. An unregistered key or a wrong op is a runtime error (seed: patch/apply failure). */
export function applyPatches(
  registry: KeyRegistry,
  state: StateScopes,
  patches: readonly StatePatch[],
): StateScopes {
  if (patches.length === 0) return state;
  const run = { ...state.run };
  const thread = { ...state.thread };
  for (const patch of patches) {
    const def = registry.get(patch.key);
    if (!def) throw new StatePatchError(`state key "${patch.key}" is not registered`);
    const target = def.scope === 'run' ? run : thread;
    if (patch.op === 'reduce') {
      if (def.merge !== 'commutative' || def.reducer === undefined)
        throw new StatePatchError(
          `state key "${patch.key}" is exclusive: use set/delete, not reduce`,
        );
      target[patch.key] = reduce(def.reducer, target[patch.key], patch.value, patch.key);
    } else if (def.merge === 'commutative') {
      throw new StatePatchError(
        `state key "${patch.key}" is commutative: use reduce, not ${patch.op}`,
      );
    } else if (patch.op === 'set') {
      target[patch.key] = patch.value;
    } else {
      delete target[patch.key];
    }
  }
  return { run, thread };
}

export interface PatchConflict {
  readonly key: string;
  readonly winner: string;
  readonly rejected: string[];
}

export interface MergedPatches {
  readonly patches: StatePatch[];
  readonly conflicts: PatchConflict[];
  /** Calls whose patches were discarded because an earlier call in the round owns a key. */
  readonly rejectedCalls: ReadonlySet<string>;
}

/**
 * Parallel rounds: all calls saw the same frozen snapshot, so two writers of one exclusive key
 * conflict. Resolution is deterministic: the earliest call in the model's order wins and every
 * later writer's patches are discarded as a unit (a call's patches are all-or-nothing).
 */
export function mergeRoundPatches(
  registry: KeyRegistry,
  perCall: readonly { readonly callId: string; readonly patches: readonly StatePatch[] }[],
): MergedPatches {
  const owner = new Map<string, string>();
  const conflicts = new Map<string, PatchConflict>();
  const rejectedCalls = new Set<string>();
  for (const { callId, patches } of perCall) {
    const exclusiveKeys = new Set(
      patches.filter((p) => registry.get(p.key)?.merge !== 'commutative').map((p) => p.key),
    );
    let rejected = false;
    for (const key of exclusiveKeys) {
      const first = owner.get(key);
      if (first !== undefined && first !== callId) {
        rejected = true;
        const existing = conflicts.get(key);
        if (existing) existing.rejected.push(callId);
        else conflicts.set(key, { key, winner: first, rejected: [callId] });
      }
    }
    if (rejected) {
      rejectedCalls.add(callId);
      continue;
    }
    for (const key of exclusiveKeys) owner.set(key, callId);
  }
  const patches = perCall.filter((c) => !rejectedCalls.has(c.callId)).flatMap((c) => c.patches);
  return { patches, conflicts: [...conflicts.values()], rejectedCalls };
}

/** What survives the run: thread-scope persistent keys. */
export function persistentThreadState(
  registry: KeyRegistry,
  state: StateScopes,
): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(state.thread)) {
    if (registry.get(key)?.persistent) out[key] = value;
  }
  return out;
}

/** At RunEnd non-persistent run keys are dropped from the final checkpoint. */
export function dropEphemeral(registry: KeyRegistry, state: StateScopes): StateScopes {
  const run: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(state.run)) {
    if (registry.get(key)?.persistent) run[key] = value;
  }
  return { run, thread: state.thread };
}
