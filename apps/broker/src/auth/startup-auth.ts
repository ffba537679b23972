import type { BrokerConfig } from '../config.js';
import { type AuthFile, readAuthFile } from './auth-file.js';
import { unauthenticatedBindRefusal } from './bind-policy.js';
import { authFileOfLegacyTokens } from './legacy-auth-tokens.js';

/** A setting the broker refuses to start with; `ricochet-broker` prints its message and exits 2. */
export class BrokerStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokerStartError';
  }
}

/** The auth settings the broker starts with: the principals in force, and what to warn about. */
export interface StartupAuth {
  /** `undefined`: no authentication. */
  readonly authFile: AuthFile | undefined;
  readonly warnings: readonly string[];
}

/**
 * Read the auth settings at start: the auth file (a bad one stops the start, unlike on reload,
 * where the one in force stays), or the deprecated `--auth-tokens`, and refuse to listen
 * unauthenticated on a non-loopback address (DESIGN.md §7).
 * @throws BrokerStartError saying what is wrong and what to do.
 */
export async function loadStartupAuth(config: {
  readonly authFile?: BrokerConfig['authFile'];
  readonly authTokens: readonly string[];
  readonly host: string;
  readonly allowUnauthenticated: boolean;
}): Promise<StartupAuth> {
  const warnings: string[] = [];
  let authFile: AuthFile | undefined;
  if (config.authFile !== undefined) {
    if (config.authTokens.length > 0)
      throw new BrokerStartError(
        '--auth-tokens and --auth-file exclude each other: put every principal in the auth file',
      );
    const read = await readAuthFile(config.authFile);
    if (!read.ok) throw new BrokerStartError(`the auth file is refused: ${read.message}`);
    authFile = read.authFile;
  } else if (config.authTokens.length > 0) {
    authFile = authFileOfLegacyTokens(config.authTokens);
    warnings.push(
      '--auth-tokens is deprecated: each of its tokens may do everything, the admin API and /metrics included. ' +
        'Move to an auth file with per-principal permissions (docs/guides/security.md).',
    );
  }
  const refusal = unauthenticatedBindRefusal({
    host: config.host,
    authenticated: authFile !== undefined,
    allowUnauthenticated: config.allowUnauthenticated,
  });
  if (refusal) throw new BrokerStartError(refusal);
  if (authFile === undefined && config.allowUnauthenticated)
    warnings.push(
      `--allow-unauthenticated: anyone who reaches ${config.host} may send, consume and reconfigure`,
    );
  return { authFile, warnings };
}
