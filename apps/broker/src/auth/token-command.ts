import { randomBytes } from 'node:crypto';
import { PRINCIPAL_NAME_REGEX } from './auth-file.js';
import { tokenDigest } from './principal-directory.js';

/** Random bytes per token: 256 bits, well above the 128 the issue asks for. */
const TOKEN_BYTES = 32;

export const TOKEN_USAGE = `Usage: ricochet-broker token --name <name>

Prints a new random token and the auth-file entry that holds its SHA-256. Give the token to the
client (its \`token\` option, or \`Authorization: Bearer <token>\` over HTTP); paste the entry into the
auth file's "principals", add its permissions, and send the broker SIGHUP.`;

/** A new token: 32 bytes from the OS's CSPRNG, base64url (43 characters, no padding). */
export function newToken(random: (size: number) => Buffer = randomBytes): string {
  return random(TOKEN_BYTES).toString('base64url');
}

/** The outcome of `ricochet-broker token …`: what to print, and where. */
export type TokenCommandResult =
  | { readonly ok: true; readonly output: string }
  | { readonly ok: false; readonly message: string }
  | { readonly ok: 'help'; readonly message: string };

/**
 * `ricochet-broker token --name <name>`: a new token and its auth-file entry. The entry grants
 * nothing until permissions are added to it, so pasting it as printed is safe.
 */
export function runTokenCommand(
  argv: readonly string[],
  random: (size: number) => Buffer = randomBytes,
): TokenCommandResult {
  let name: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') return { ok: 'help', message: TOKEN_USAGE };
    if (arg === '--name') {
      name = argv[++i];
      if (name === undefined) return { ok: false, message: `--name needs a value\n\n${TOKEN_USAGE}` };
    } else if (arg.startsWith('--name=')) name = arg.slice('--name='.length);
    else return { ok: false, message: `unknown argument ${arg}\n\n${TOKEN_USAGE}` };
  }
  if (name === undefined) return { ok: false, message: `--name is required\n\n${TOKEN_USAGE}` };
  if (!PRINCIPAL_NAME_REGEX.test(name))
    return {
      ok: false,
      message: `--name: "${name}" is not a principal name: 1–128 of A–Z a–z 0–9 _ . : @ -`,
    };
  const token = newToken(random);
  const entry = { name, tokenSha256: tokenDigest(token).toString('hex') };
  return {
    ok: true,
    output: [
      'token (give it to the client; the broker keeps only its SHA-256, so it is shown this once):',
      token,
      '',
      'auth-file entry (add its permissions, then paste it into "principals"):',
      JSON.stringify(entry),
    ].join('\n'),
  };
}
