import type { ApiKeyView, CreatedApiKey } from '@baton/protocol';
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { parseCount } from '../options.ts';
import { when, type Style } from '../render.ts';

function keyLine(k: ApiKeyView, s: Style): string {
  const status =
    k.status === 'active'
      ? s.green(k.status.padEnd(7))
      : k.status === 'grace'
        ? s.yellow(k.status.padEnd(7))
        : s.dim(k.status.padEnd(7));
  const until = k.expiresAt !== undefined ? `  until ${when(k.expiresAt)}` : '';
  const used = k.lastUsedAt !== undefined ? `  used ${when(k.lastUsedAt)}` : '  never used';
  return `${k.id}  ${status}  ${k.tenant.padEnd(16)}  created ${when(k.createdAt)}${until}${used}${k.name ? `  ${s.dim(k.name)}` : ''}`;
}

function created(k: CreatedApiKey, s: Style): string {
  return `${keyLine(k, s)}\n${s.bold(k.key)}\n${s.dim('(shown once: store it now; Baton keeps only its hash)')}\n`;
}

/** `baton keys create|list|rotate|revoke`: tenant API keys managed at run time (admin key). */
export function keysCommand(program: Command, ctx: CommandContext): void {
  const keys = program
    .command('keys')
    .description('tenant API keys managed at run time (needs an admin key)');

  keys
    .command('create')
    .description('a new key for a tenant; the secret is printed once')
    .argument('<tenant>', 'tenant id')
    .option('--name <name>', 'a label for people')
    .option('--expires-in <seconds>', 'the key stops working after this many seconds', parseCount)
    .option('--json', 'the key as JSON')
    .action(
      async (
        tenant: string,
        opts: { name?: string; expiresIn?: number; json?: boolean },
        cmd: Command,
      ) => {
        const key = await ctx.clientFor(cmd).keys.create(
          {
            tenant,
            ...(opts.name !== undefined ? { name: opts.name } : {}),
            ...(opts.expiresIn !== undefined ? { expiresInSeconds: opts.expiresIn } : {}),
          },
          { signal: ctx.io.signal },
        );
        if (opts.json) ctx.json(key);
        else ctx.out(created(key, ctx.styleFor(cmd)));
      },
    );

  keys
    .command('list')
    .description('managed keys, newest first (never a secret)')
    .option('--tenant <tenant>', "only this tenant's keys")
    .option('--json', 'the list as JSON')
    .action(async (opts: { tenant?: string; json?: boolean }, cmd: Command) => {
      const list = await ctx
        .clientFor(cmd)
        .keys.list(opts.tenant !== undefined ? { tenant: opts.tenant } : {}, {
          signal: ctx.io.signal,
        });
      if (opts.json) return ctx.json({ keys: list });
      const s = ctx.styleFor(cmd);
      ctx.out(
        list.length === 0
          ? s.dim('no managed keys') + '\n'
          : list.map((k) => keyLine(k, s)).join('\n') + '\n',
      );
    });

  keys
    .command('rotate')
    .description('a new key for the same tenant; the old one works for the grace period')
    .argument('<id>', 'key id (key_…)')
    .option('--grace <seconds>', 'how long the old key keeps working (default 3600)', parseCount)
    .option('--json', 'the new key as JSON')
    .action(async (id: string, opts: { grace?: number; json?: boolean }, cmd: Command) => {
      const key = await ctx
        .clientFor(cmd)
        .keys.rotate(id, opts.grace !== undefined ? { graceSeconds: opts.grace } : {}, {
          signal: ctx.io.signal,
        });
      if (opts.json) ctx.json(key);
      else ctx.out(created(key, ctx.styleFor(cmd)));
    });

  keys
    .command('revoke')
    .description('stop a key now, on every API within a second')
    .argument('<id>', 'key id (key_…)')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      await ctx.clientFor(cmd).keys.revoke(id, { signal: ctx.io.signal });
      ctx.out(`revoked ${id}\n`);
    });
}
