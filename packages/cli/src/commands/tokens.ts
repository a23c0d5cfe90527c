import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { UsageError } from '../usage-error.ts';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * `baton tokens mint | revoke | rotate-key`: scoped tokens for end users (docs/http-api.md,
 * Tokens). `mint` prints the token alone (for a script) unless --json.
 */
export function tokensCommand(program: Command, ctx: CommandContext): void {
  const tokens = program
    .command('tokens')
    .description('scoped, revocable tokens for end users; the signing keys (admin)');

  tokens
    .command('mint')
    .description('mint a token (tenant key): prints it')
    .requiredOption(
      '-s, --scope <scope>',
      'a scope, e.g. run:read:<runId> (repeatable)',
      collect,
      [],
    )
    .option('--subject <subject>', 'the end user the token acts for')
    .option('--expires-in <seconds>', 'lifetime in seconds (default 900)')
    .option('--one-use', 'accepted for one request only')
    .option('--json', 'the whole answer as JSON')
    .action(
      async (
        opts: {
          scope: string[];
          subject?: string;
          expiresIn?: string;
          oneUse?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const minted = await ctx.clientFor(cmd).tokens.mint(
          {
            scopes: opts.scope,
            ...(opts.subject !== undefined ? { subject: opts.subject } : {}),
            ...(opts.expiresIn !== undefined ? { expiresIn: Number(opts.expiresIn) } : {}),
            ...(opts.oneUse ? { oneUse: true } : {}),
          },
          { signal: ctx.io.signal },
        );
        if (opts.json) return ctx.json(minted);
        ctx.out(`${minted.token}\n`);
      },
    );

  tokens
    .command('revoke')
    .description('revoke one token (--token-id) or every token of a subject (--subject)')
    .option('--token-id <jti>', "the token's id (tokenId of mint)")
    .option('--subject <subject>', 'every token of this subject issued so far')
    .action(async (opts: { tokenId?: string; subject?: string }, cmd: Command) => {
      if ((opts.tokenId === undefined) === (opts.subject === undefined))
        throw new UsageError('give one of --token-id <jti> or --subject <subject>');
      const request =
        opts.tokenId !== undefined ? { tokenId: opts.tokenId } : { subject: opts.subject! };
      await ctx.clientFor(cmd).tokens.revoke(request, { signal: ctx.io.signal });
      ctx.out('revoked\n');
    });

  tokens
    .command('rotate-key')
    .description(
      'a new signing key on every API (admin key); old ones verify until their tokens expire',
    )
    .option('--json', 'the key list as JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const keys = await ctx.clientFor(cmd).tokens.rotateSigningKey({ signal: ctx.io.signal });
      if (opts.json) return ctx.json(keys);
      ctx.out(`signing with ${keys.kid ?? '?'}\n`);
    });
}
