import type { BrokerConfig } from './config.js';
import type { TlsCredentials } from './tls.js';

/** Node's default is 30 s between sweeps for timed-out requests; a sweep costs one pass over open requests. */
const MAX_CONNECTIONS_CHECK_INTERVAL_MS = 1_000;

/** The Fastify options that make the HTTP(S) server: TLS when a pair is given, and its timeouts. */
export type HttpServerOptions =
  | { readonly http: Record<string, number>; readonly requestTimeout: number }
  | { readonly https: Record<string, number | Buffer>; readonly requestTimeout: number };

/**
 * Timeouts for connections that never finish (issue 10): Node closes a connection whose request
 * line and headers — an upgrade request's included — take longer than `httpHeadersTimeoutMs`
 * (answering 408), and one whose whole request takes longer than `httpRequestTimeoutMs`. A TLS
 * handshake gets the headers' budget too. Node checks these on a sweep; it runs at least every
 * second, so a stalled connection goes at most a second after its deadline.
 */
export function httpServerOptions(config: BrokerConfig, tls: TlsCredentials | undefined): HttpServerOptions {
  const timeouts = {
    headersTimeout: config.httpHeadersTimeoutMs,
    requestTimeout: config.httpRequestTimeoutMs,
    connectionsCheckingInterval: Math.min(
      MAX_CONNECTIONS_CHECK_INTERVAL_MS,
      Math.max(10, Math.floor(config.httpHeadersTimeoutMs / 4)),
    ),
  };
  // Fastify sets the server's requestTimeout from its own option after creating it: pass both.
  if (tls === undefined) return { http: timeouts, requestTimeout: config.httpRequestTimeoutMs };
  return {
    https: { ...timeouts, handshakeTimeout: config.httpHeadersTimeoutMs, cert: tls.cert, key: tls.key },
    requestTimeout: config.httpRequestTimeoutMs,
  };
}
