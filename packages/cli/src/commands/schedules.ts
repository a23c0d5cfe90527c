import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { schedulesCreateCommand } from './schedules-create.ts';
import { schedulesListCommand } from './schedules-list.ts';
import { schedulesRunsCommand } from './schedules-runs.ts';
import { schedulesStateCommands } from './schedules-state.ts';

/** `baton schedules <list|get|create|pause|resume|delete|runs>`. */
export function schedulesCommand(program: Command, ctx: CommandContext): void {
  const schedules = program
    .command('schedules')
    .description('scheduled runs: list, inspect, create, pause, resume, delete, and their runs');
  schedulesListCommand(schedules, ctx);
  schedulesCreateCommand(schedules, ctx);
  schedulesStateCommands(schedules, ctx);
  schedulesRunsCommand(schedules, ctx);
}
