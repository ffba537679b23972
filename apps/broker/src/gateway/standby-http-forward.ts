import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** Paths a standby answers itself, never forwarded: what describes this process, not the owner. */
export const STANDBY_OWN_PATHS = new Set(['/healthz', '/metrics']);

/**
 * Forward one HTTP request to the store's owner, at its advertised URL (`ws://` → `http://`,
 * `wss://` → `https://`), and stream its answer back: the admin API and the HTTP transport
 * (`POST /v1/frames`) of a standby are the owner's. Both bodies are piped, so backpressure is
 * TCP's. If the owner cannot be reached, `unreachable` answers instead.
 */
export function forwardHttp(
  request: IncomingMessage,
  response: ServerResponse,
  ownerUrl: string,
  unreachable: () => void,
): void {
  const target = new URL(request.url ?? '/', ownerUrl.replace(/^ws/, 'http'));
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(target, {
    method: request.method,
    headers: { ...request.headers, host: target.host },
  });
  upstream.on('response', (answer) => {
    response.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(response);
  });
  upstream.on('error', () => {
    if (!response.headersSent) unreachable();
    else response.destroy();
  });
  request.pipe(upstream);
}
