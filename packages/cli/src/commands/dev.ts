import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import type { Command } from 'commander';
import { batonCheckout, typescriptNode } from '../checkout.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { UsageError } from '../usage-error.ts';

/** What `baton dev` runs when neither arguments nor BATON_AGENTS say. */
const DEFAULT_SOURCES = ['agents.ts', 'agents.js', 'baton.agents.yaml'];

/**
 * `baton dev [sources…]`: `npm start` of the Baton checkout (API, worker, Redis; see
 * scripts/start.ts) run in this folder with these agents, restarting only the worker when a
 * file in their folders changes. `.env` here fills what the environment does not set.
 */
export function devCommand(program: Command, ctx: CommandContext): void {
  program
    .command('dev')
    .description('run Baton locally with your agents; reload the worker when they change')
    .argument(
      '[sources...]',
      'agent modules (.ts/.js) and agents files (.yaml) (default: BATON_AGENTS, else agents.ts and baton.agents.yaml here)',
    )
    .option('--no-watch', 'do not reload on changes (still restarts a crashed worker or API)')
    .option(
      '--fresh',
      'start with an empty local Redis (the runs of earlier starts, kept in .baton/, are gone; the API key stays)',
    )
    .action(async (sources: string[], opts: { watch: boolean; fresh?: boolean }) => {
      const root = batonCheckout('dev');
      const cwd = process.cwd();
      const env: NodeJS.ProcessEnv = { ...ctx.io.env };
      const dotenv = join(cwd, '.env');
      if (existsSync(dotenv))
        for (const [k, v] of Object.entries(parseEnv(readFileSync(dotenv, 'utf8'))))
          if (env[k] === undefined) env[k] = v;
      const agents =
        sources.length > 0
          ? sources.join(',')
          : (env['BATON_AGENTS'] ??
            DEFAULT_SOURCES.filter((f) => existsSync(join(cwd, f))).join(','));
      if (!agents)
        throw new UsageError(
          `no agents to run: name them (baton dev agents.ts), set BATON_AGENTS, or add ${DEFAULT_SOURCES.join(' or ')} here (baton init <dir> makes a folder with both)`,
        );
      env['BATON_AGENTS'] = agents;
      if (!existsSync(join(root, 'apps', 'console', 'dist', 'index.html'))) {
        // What `npm start` does first (prestart), once: the API serves the built run console.
        ctx.io.stderr.write('baton dev: building the run console once (npm run build:console)…\n');
        const built = await new Promise<number | null>((resolve) =>
          spawn('npm', ['run', '-s', 'build:console'], { cwd: root, stdio: 'inherit' })
            .on('error', () => resolve(null))
            .on('exit', resolve),
        );
        if (built !== 0)
          ctx.io.stderr.write(
            'baton dev: the run console did not build; Baton runs without it (/console answers 503)\n',
          );
      }
      env['BATON_WATCH'] = opts.watch ? '1' : '0';
      const startArgs = [join(root, 'scripts', 'start.ts'), ...(opts.fresh ? ['--fresh'] : [])];
      const child = spawn(typescriptNode(root), startArgs, {
        cwd,
        env,
        stdio: 'inherit',
      });
      // Ctrl-C reaches both processes (one process group); a SIGTERM sent to us alone is passed
      // on. Either way we wait for Baton to stop: a second signal must not orphan it.
      const onAbort = (): void => {
        if ((ctx.io.signal.reason as Error | undefined)?.message !== 'interrupted')
          child.kill('SIGTERM');
      };
      const stay = (): void => undefined;
      ctx.io.signal.addEventListener('abort', onAbort, { once: true });
      process.on('SIGINT', stay).on('SIGTERM', stay);
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      process.off('SIGINT', stay).off('SIGTERM', stay);
      ctx.io.signal.removeEventListener('abort', onAbort);
      ctx.exitWith(code === 0 ? EXIT.ok : EXIT.internal);
    });
}
