import type { AuthFile } from './auth-file.js';
import { tokenDigest } from './principal-directory.js';

/**
 * `--auth-tokens a,b` (deprecated): each token becomes a principal that may do everything, named
 * `auth-token-1`, `auth-token-2`… in logs and delivery history. Kept so brokers started with
 * it keep working; unlike before, the admin API and `/metrics` now ask for the token too.
 */
export function authFileOfLegacyTokens(tokens: readonly string[]): AuthFile {
  return {
    principals: tokens.map((token, index) => ({
      name: `auth-token-${index + 1}`,
      tokenSha256: tokenDigest(token).toString('hex'),
      publish: ['*'],
      consume: [{ group: '*', topics: ['*'] }],
      admin: 'write',
      metrics: true,
    })),
  };
}
