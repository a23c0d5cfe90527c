import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { batonCheckout, templateDir } from '../checkout.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { scaffold } from '../scaffold.ts';

/** `baton init <dir>`: a folder of your own agents, linked to this Baton, with a dev loop. */
export function initCommand(program: Command, ctx: CommandContext): void {
  program
    .command('init')
    .description('make a folder for your own agents (TypeScript + YAML) with `npm run dev`')
    .argument('<dir>', 'the folder to create (or an empty one)')
    .option('--baton <path>', 'the Baton clone to link (default: the one this baton runs from)')
    .option('--no-install', 'do not run `npm install` in it')
    .option(
      '--force',
      'write into a folder that is not empty (its files with our names are replaced)',
    )
    .action(async (dir: string, opts: { baton?: string; install: boolean; force?: boolean }) => {
      const baton = batonCheckout('init', opts.baton);
      const made = await scaffold({
        dir,
        cwd: process.cwd(),
        baton,
        template: templateDir(),
        force: opts.force === true,
      });
      ctx.out(`Created ${made.dir}: ${made.files.join(', ')} (Baton: ${baton})\n`);
      if (opts.install) {
        ctx.out('Installing (npm install; Baton itself is linked, not downloaded)…\n');
        const code = await new Promise<number | null>((resolve) => {
          const npm = spawn('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], {
            cwd: made.dir,
            stdio: ['ignore', 'inherit', 'inherit'],
          });
          npm.on('error', () => resolve(null));
          npm.on('exit', resolve);
        });
        if (code !== 0) {
          ctx.io.stderr.write(
            `baton init: npm install failed in ${made.dir}; run it there yourself, then npm run dev\n`,
          );
          return ctx.exitWith(EXIT.internal);
        }
      }
      ctx.out(
        [
          '',
          'Next:',
          `  cd ${made.relative.startsWith('..') ? made.dir : made.relative}${opts.install ? '' : '\n  npm install'}`,
          '  npm run dev        # Baton with your agents; saving a file reloads the worker',
          '',
          'Then, from another terminal in that folder (npm run dev prints the URL and the key):',
          '  npx baton runs create --agent counter -m "one two three" --watch',
          '',
        ].join('\n'),
      );
    });
}
