import { isIPv4, isIPv6 } from 'node:net';

/**
 * Whether `host` is a loopback address: `localhost`, 127.0.0.0/8, `::1` (bracketed or not) or an
 * IPv4-mapped 127 address. Any other name counts as reachable from the network: without resolving
 * it, the broker cannot know better, and guessing wrong would expose it.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === 'localhost') return true;
  if (isIPv4(lower)) return lower.startsWith('127.');
  if (isIPv6(lower)) {
    if (lower === '::1' || lower === '0:0:0:0:0:0:0:1') return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)?.[1];
    return mapped?.startsWith('127.') === true;
  }
  return false;
}

/**
 * Safe by default (DESIGN.md §7): without authentication the broker binds only loopback
 * addresses, unless told `--allow-unauthenticated`. The refusal's text, or `undefined` to go on.
 */
export function unauthenticatedBindRefusal(options: {
  readonly host: string;
  readonly authenticated: boolean;
  readonly allowUnauthenticated: boolean;
}): string | undefined {
  if (options.authenticated || options.allowUnauthenticated || isLoopbackHost(options.host)) return undefined;
  return (
    `refusing to listen on ${options.host} without authentication: anyone who reaches it could send, ` +
    'consume and reconfigure. Give an auth file (--auth-file / RICOCHET_AUTH_FILE; see docs/guides/security.md), ' +
    'bind a loopback address (--host 127.0.0.1), or pass --allow-unauthenticated if the network itself is trusted.'
  );
}
