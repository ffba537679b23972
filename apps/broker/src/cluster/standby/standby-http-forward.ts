import {
  type ClientRequest,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';

/** Paths a standby answers itself, never forwarded: what describes this process, not the owner. */
export const STANDBY_OWN_PATHS = new Set(['/healthz', '/metrics']);

/** Headers about one connection, not the message (RFC 9110 §7.6.1): a proxy never passes them on. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * `headers` without the hop-by-hop ones, nor those `Connection` names. Passed on, the owner's
 * `Keep-Alive: timeout=72` told the client to keep an idle connection to the standby for 72 s,
 * which the standby's own server closes after 5: the client's next request after such a pause
 * could go out on a connection being closed, and fail.
 */
function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase());
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named.includes(name)) kept[name] = value;
  }
  return kept;
}

/** How long an owner may take to answer `Expect: 100-continue` before the relay tries again. */
const CONTINUE_WAIT_MS = 2_000;

/** A forwarded request whose owner took its headers (see {@link openForwardRequest}). */
export interface OpenedForward {
  readonly upstream: ClientRequest;
  /** The owner's final answer, when it came before asking for the body (say a 413 or a 401). */
  readonly earlyAnswer?: IncomingMessage;
}

/**
 * Open the request that forwards `request` to the store's owner, at its advertised URL (`ws://` →
 * `http://`, `wss://` → `https://`): resolves once the owner took the request's headers, with the
 * body not sent yet, or `undefined` if it cannot be reached. The client's body stays unread
 * meanwhile, so a failed attempt costs nothing and the relay can try the next owner.
 *
 * A request with a body goes out with `Expect: 100-continue`, and the owner's `100 Continue`
 * (Node's server sends it by itself) is what says it is reachable, not the TCP connection alone:
 * a dead owner's port may by then belong to another process, which accepts and hangs up (seen in
 * the tests, where every server binds port 0), and a body already sent there could not be sent
 * again. A request without a body (the admin API's GETs) may not carry the expectation, and is
 * sent once the connection is open.
 */
export function openForwardRequest(
  request: IncomingMessage,
  ownerUrl: string,
): Promise<OpenedForward | undefined> {
  const target = new URL(request.url ?? '/', ownerUrl.replace(/^ws/, 'http'));
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const withBody = hasBody(request);
  const upstream = send(target, {
    method: request.method,
    headers: {
      ...endToEnd(request.headers),
      host: target.host,
      ...(withBody ? { expect: '100-continue' } : {}),
    },
  });
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const settle = (opened: OpenedForward | undefined) => {
      clearTimeout(timer);
      upstream.off('error', failed);
      upstream.off('continue', continued);
      upstream.off('response', answered);
      if (opened === undefined) upstream.destroy();
      resolve(opened);
    };
    const failed = () => settle(undefined);
    const continued = () => settle({ upstream });
    const answered = (answer: IncomingMessage) => settle({ upstream, earlyAnswer: answer });
    upstream.once('error', failed);
    if (withBody) {
      upstream.once('continue', continued);
      upstream.once('response', answered);
      timer = setTimeout(failed, CONTINUE_WAIT_MS);
      upstream.flushHeaders();
      return;
    }
    upstream.once('socket', (socket) => {
      if (socket.connecting) socket.once('connect', continued);
      else continued();
    });
  });
}

/** Whether `request` carries a body: a length above 0, or a chunked one. */
function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Send `request` on through the request {@link openForwardRequest} opened and stream the owner's
 * answer back: the admin API and the HTTP transport (`POST /v1/frames`) of a standby are the
 * owner's. Both bodies are piped, so backpressure is TCP's. If the exchange fails before the
 * answer started, `unreachable` answers instead.
 */
export function forwardHttp(
  request: IncomingMessage,
  response: ServerResponse,
  opened: OpenedForward,
  unreachable: () => void,
): void {
  const { upstream, earlyAnswer } = opened;
  const answer = (owner: IncomingMessage) => {
    response.writeHead(owner.statusCode ?? 502, endToEnd(owner.headers));
    owner.pipe(response);
  };
  upstream.on('error', () => {
    if (!response.headersSent) unreachable();
    else response.destroy();
  });
  if (earlyAnswer !== undefined) {
    // The owner answered without the body: it is not sent, only read off the client's connection.
    upstream.end();
    request.resume();
    answer(earlyAnswer);
    return;
  }
  upstream.on('response', answer);
  request.pipe(upstream);
}
