import { badRequestError } from './client-error.js';
import { HttpTransport } from './http-transport.js';
import { TcpTransport } from './tcp-transport.js';
import type { TlsOptions } from './tls-options.js';
import type { Transport } from './transport.js';
import type { WebSocketConstructor } from './web-socket.js';
import { WebSocketTransport } from './websocket-transport.js';

/** What picking a transport takes from the connection's options. */
export interface TransportChoice {
  readonly webSocket?: WebSocketConstructor | undefined;
  readonly tls?: TlsOptions | undefined;
}

/** The schemes an endpoint may use, each with the transport that serves it. */
const TRANSPORTS: Readonly<Record<string, (endpoint: URL, choice: TransportChoice) => Transport>> = {
  'ws:': (endpoint, { webSocket, tls }) => new WebSocketTransport(endpoint, { webSocket, tls }),
  'wss:': (endpoint, { webSocket, tls }) => new WebSocketTransport(endpoint, { webSocket, tls }),
  'tcp:': (endpoint) => new TcpTransport(endpoint, undefined),
  'tls:': (endpoint, { tls }) => new TcpTransport(endpoint, tls),
  'http:': (endpoint) => new HttpTransport(endpoint, undefined),
  'https:': (endpoint, { tls }) => new HttpTransport(endpoint, tls),
};

/** The schemes that carry TLS, where the `tls` option applies. */
const TLS_SCHEMES: ReadonlySet<string> = new Set(['wss:', 'tls:', 'https:']);

/**
 * The transport for `endpoint`, by its scheme: `ws://`/`wss://` a WebSocket, `tcp://`/`tls://` a
 * length-prefixed stream, `http://`/`https://` a POST per frame. Nothing is loaded yet: each
 * transport imports its runtime modules (`ws`, `net`, `tls`, `https`) when it first connects.
 * @throws ClientError `400` when `endpoint` is not a URL or has another scheme, or for `tls` with
 *   a scheme without TLS, or `tls` combined with `webSocket`.
 */
export function transportFor(endpoint: string, choice: TransportChoice = {}): Transport {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch (cause) {
    throw badRequestError(`endpoint '${endpoint}' is not a URL`, { cause });
  }
  const create = TRANSPORTS[url.protocol];
  if (create === undefined) {
    const schemes = Object.keys(TRANSPORTS).map((scheme) => `${scheme}//`);
    throw badRequestError(`endpoint '${endpoint}' must start with ${schemes.join(', ')}`);
  }
  if (choice.tls !== undefined) {
    if (!TLS_SCHEMES.has(url.protocol)) {
      throw badRequestError('the tls option needs a wss://, tls:// or https:// endpoint');
    }
    if (choice.webSocket !== undefined) {
      throw badRequestError('tls and webSocket cannot be combined: give your own WebSocket its TLS settings');
    }
  }
  return create(url, choice);
}
