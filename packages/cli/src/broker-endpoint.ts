import { usageError } from './cli-error.js';

/** The broker's default address: `ricochet-broker`'s default port on loopback. */
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:7720';

/** One broker, as the CLI reaches it: the admin HTTP API and the WebSocket clients share its port. */
export interface BrokerEndpoint {
  /** What the user gave (or the default), for messages. */
  readonly given: string;
  /** The admin API's base URL, `http(s)://host:port[/prefix]`, without a trailing slash. */
  readonly adminUrl: string;
  /** The clients' `endpoint`, `ws(s)://host:port[/prefix]` (the client adds `/v1/ws`). */
  readonly webSocketUrl: string;
}

const SCHEME_PAIRS: Readonly<Record<string, { http: string; ws: string }>> = {
  'http:': { http: 'http:', ws: 'ws:' },
  'ws:': { http: 'http:', ws: 'ws:' },
  'https:': { http: 'https:', ws: 'wss:' },
  'wss:': { http: 'https:', ws: 'wss:' },
};

/**
 * Map one endpoint to both URLs: `http://` and `ws://` name the same broker (so do `https://` and
 * `wss://`), since the broker serves the admin API and the WebSocket on one port. A path prefix,
 * for a broker behind a proxy, is kept on both.
 * @throws CliError USAGE for anything but an http(s) or ws(s) URL.
 */
export function parseBrokerEndpoint(given: string): BrokerEndpoint {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw usageError(`--endpoint '${given}' is not a URL; write it like ${DEFAULT_ENDPOINT}`);
  }
  const schemes = SCHEME_PAIRS[url.protocol];
  if (schemes === undefined) {
    throw usageError(
      `--endpoint '${given}' must start with http://, https://, ws:// or wss:// (the admin API is HTTP, on the broker's --port)`,
    );
  }
  if (url.search !== '' || url.hash !== '') {
    throw usageError(`--endpoint '${given}' must not carry a query or a fragment`);
  }
  const prefix = url.pathname.replace(/\/+$/, '');
  return {
    given,
    adminUrl: `${schemes.http}//${url.host}${prefix}`,
    webSocketUrl: `${schemes.ws}//${url.host}${prefix}`,
  };
}
