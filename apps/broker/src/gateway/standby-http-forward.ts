import {
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';

/** Paths a standby answers itself, never forwarded: what describes this process, not the owner. */
export const STANDBY_OWN_PATHS = new Set(['/healthz', '/metrics']);

/**
 * Open the request that forwards `request` to the store's owner, at its advertised URL (`ws://` →
 * `http://`, `wss://` → `https://`): resolves once its connection to the owner is open, with
 * nothing sent yet, or `undefined` if the owner cannot be reached. The client's body stays unread
 * meanwhile, so a refused attempt costs nothing and the relay can try the next owner.
 */
export function openForwardRequest(
  request: IncomingMessage,
  ownerUrl: string,
): Promise<ClientRequest | undefined> {
  const target = new URL(request.url ?? '/', ownerUrl.replace(/^ws/, 'http'));
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(target, {
    method: request.method,
    headers: { ...request.headers, host: target.host },
  });
  return new Promise((resolve) => {
    const failed = () => {
      upstream.destroy();
      resolve(undefined);
    };
    upstream.once('error', failed);
    upstream.once('socket', (socket) => {
      const opened = () => {
        upstream.off('error', failed);
        resolve(upstream);
      };
      if (socket.connecting) socket.once('connect', opened);
      else opened();
    });
  });
}

/**
 * Send `request` on through `upstream` (from {@link openForwardRequest}) and stream the owner's
 * answer back: the admin API and the HTTP transport (`POST /v1/frames`) of a standby are the
 * owner's. Both bodies are piped, so backpressure is TCP's. If the exchange fails before the
 * answer started, `unreachable` answers instead.
 */
export function forwardHttp(
  request: IncomingMessage,
  response: ServerResponse,
  upstream: ClientRequest,
  unreachable: () => void,
): void {
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
