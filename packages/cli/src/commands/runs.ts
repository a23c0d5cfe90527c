import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { runsCancelCommand } from './runs-cancel.ts';
import { runsCreateCommand } from './runs-create.ts';
import { runsForkCommands } from './runs-fork.ts';
import { runsGetCommand } from './runs-get.ts';
import { runsListCommand } from './runs-list.ts';
import { runsWatchCommand } from './runs-watch.ts';

/** `baton runs <create|watch|list|get|cancel|fork|replay>`. */
export function runsCommand(program: Command, ctx: CommandContext): void {
  const runs = program
    .command('runs')
    .description('create, list, inspect, watch, cancel, fork and replay runs');
  runsCreateCommand(runs, ctx);
  runsWatchCommand(runs, ctx);
  runsListCommand(runs, ctx);
  runsGetCommand(runs, ctx);
  runsCancelCommand(runs, ctx);
  runsForkCommands(runs, ctx);
}
