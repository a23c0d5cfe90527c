import type { Clock } from '@baton/core';
import type { Logger } from 'pino';
import type { RedisClient, RunWaits } from '@baton/runtime';
import type {
  AbortRegistry,
  AgentRegistry,
  BatonKeys,
  BatonQueues,
  ChildRuns,
  RedisRunStore,
  RedisThreadStore,
  RunCommitter,
  RunLeases,
  ToolResultMailbox,
} from '@baton/runtime/internal';
import type { DeltaCoalescerOptions } from './delta-coalescer.ts';
import type { MessageCache } from './message-cache.ts';

/** Everything a job processor needs; built once per worker process. */
export interface WorkerDeps {
  readonly redis: RedisClient;
  readonly keys: BatonKeys;
  readonly store: RedisRunStore;
  readonly threads: RedisThreadStore;
  readonly committer: RunCommitter;
  readonly leases: RunLeases;
  readonly mailbox: ToolResultMailbox;
  /** Runs' messages kept between passes, so a lease reads only what was added since. */
  readonly messages?: MessageCache;
  /** Agent-as-tool: starts child runs of agent-tool calls (child-runs.ts). */
  readonly children: ChildRuns;
  /** Waitpoints tools create for their calls (ToolContext.waitpoint). */
  readonly waits?: Pick<RunWaits, 'createToolWaitpoint'>;
  readonly queues: BatonQueues;
  readonly registry: AgentRegistry;
  readonly aborts: AbortRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How streamed deltas are merged into appends (default: DEFAULT_DELTA_COALESCING). */
  readonly deltas?: DeltaCoalescerOptions;
  /** Test hook: called at named points so crash tests can kill the process at an exact moment. */
  readonly probe?: (point: string, info: Record<string, unknown>) => void | Promise<void>;
}
