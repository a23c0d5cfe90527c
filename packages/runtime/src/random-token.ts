import { randomBytes } from 'node:crypto';

const TOKEN_BYTES = 16;
let pool = Buffer.alloc(0);
let offset = 0;

/**
 * 128 random bits as 22 characters (base64url): lease (fencing) tokens, which every fenced write
 * carries, and the tokens that name a run's message list. Drawn from a pool refilled 256 tokens
 * at a time (as randomUUID does): a randomBytes call per lease showed up in the worker's profile.
 */
export function randomToken(): string {
  if (offset + TOKEN_BYTES > pool.length) {
    pool = randomBytes(TOKEN_BYTES * 256);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}
