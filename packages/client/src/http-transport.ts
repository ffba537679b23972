import { decodeClientFrame, peekFrameType } from '@ricochet/protocol';
import { badRequestError } from './client-error.js';
import { LinkEvents } from './link-events.js';
import type { TlsOptions } from './tls-options.js';
import type { FrameLink, LinkConnectOptions, LinkListener, Transport } from './transport.js';

/** Where the broker takes frames over HTTP (docs/protocol/transports.md#http). */
export const HTTP_FRAMES_PATH = '/v1/frames';

const MSGPACK = 'application/msgpack';

/** In a variable, so a bundler leaves it alone: a browser bundle holds no `node:https`. */
const NODE_HTTPS: string = 'node:https';

/** The close code of a link whose request failed (RFC 6455's "abnormal closure"). */
const ABNORMAL_CLOSURE = 1006;

/** One HTTP answer, read whole. */
interface HttpAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: Uint8Array;
}

type Post = (
  url: string,
  body: Uint8Array,
  headers: Record<string, string>,
  signal: AbortSignal,
) => Promise<HttpAnswer>;

/**
 * `http://` and `https://`: request/response. Each frame the connection sends is one
 * `POST /v1/frames` with a MessagePack body, and the frame the broker answers with is handed up
 * like a frame off a stream, so correlation, the handshake and the reconnect policy (C1) are the
 * connection's, as on every transport. The `hello`'s token travels as `Authorization: Bearer` on
 * every request. Links are not streams: the broker never sends unasked, so push consumers refuse
 * these endpoints. Requests use the global `fetch` (Node 20, browsers, Deno); with the `tls`
 * option (Node only) they go through `node:https`, since `fetch` takes no TLS settings.
 */
export class HttpTransport implements Transport {
  readonly name = 'http';
  readonly stream = false;
  readonly address: string;
  readonly #post: Post;

  /**
   * @param endpoint - an `http:` or `https:` URL; a path prefix is kept, for brokers behind a proxy.
   * @throws ClientError `400` for a URL with a query or fragment.
   */
  constructor(endpoint: URL, tls: TlsOptions | undefined) {
    if (endpoint.search !== '' || endpoint.hash !== '') {
      throw badRequestError(`endpoint '${endpoint.href}' takes no query or fragment`);
    }
    const prefix = endpoint.pathname.replace(/\/+$/, '');
    this.address = `${endpoint.protocol}//${endpoint.host}${prefix}${HTTP_FRAMES_PATH}`;
    this.#post =
      tls === undefined
        ? postWithFetch
        : (url, body, headers, signal) => postWithNodeHttps(url, body, headers, signal, tls);
  }

  async connect(options: LinkConnectOptions): Promise<FrameLink> {
    if (options.signal.aborted) throw options.signal.reason;
    // Nothing to open: the hello's request is the first contact, and its failure closes the link.
    return new HttpLink(this.address, this.#post);
  }
}

/**
 * A run of requests to one broker. A request that fails (the broker unreachable, an answer that is
 * not a frame) ends the link, like a dropped socket: the connection fails what is in flight and
 * reconnects by its policy. Every request in flight is aborted when the link ends.
 */
class HttpLink implements FrameLink {
  readonly stream = false;
  readonly #address: string;
  readonly #post: Post;
  readonly #events = new LinkEvents();
  readonly #inFlight = new Set<AbortController>();
  #authorization: string | undefined;

  constructor(address: string, post: Post) {
    this.#address = address;
    this.#post = post;
  }

  listen(listener: LinkListener): void {
    this.#events.listen(listener);
  }

  send(frame: Uint8Array): void {
    if (this.#events.closed) return;
    if (peekFrameType(frame) === 'hello') {
      const hello = decodeClientFrame(frame);
      const token = hello.ok && hello.frame.type === 'hello' ? hello.frame.token : undefined;
      this.#authorization = token === undefined ? undefined : `Bearer ${token}`;
    }
    const request = new AbortController();
    this.#inFlight.add(request);
    const headers: Record<string, string> = {
      'content-type': MSGPACK,
      accept: MSGPACK,
      ...(this.#authorization === undefined ? {} : { authorization: this.#authorization }),
    };
    this.#post(this.#address, frame, headers, request.signal)
      .then((answer) => {
        if (request.signal.aborted) return;
        // Every answer of the broker is a frame (its error frames carry the status's reason);
        // anything else came from something in between, a proxy say.
        if (!answer.contentType.toLowerCase().startsWith(MSGPACK) || answer.body.byteLength === 0) {
          this.#end(`${this.#address} answered HTTP ${answer.status} without a frame`, undefined);
          return;
        }
        this.#events.frame(answer.body);
      })
      .catch((error: unknown) => {
        if (request.signal.aborted) return;
        const cause = (error as { cause?: unknown }).cause ?? error;
        const why = cause instanceof Error ? cause.message : String(cause);
        this.#end(`the request to ${this.#address} failed: ${why}`, cause);
      })
      .finally(() => this.#inFlight.delete(request));
  }

  async close(): Promise<void> {
    this.#events.mute();
    this.#abortAll();
  }

  #end(reason: string, error: unknown): void {
    this.#abortAll();
    this.#events.close({ code: ABNORMAL_CLOSURE, reason, ...(error === undefined ? {} : { error }) });
  }

  #abortAll(): void {
    for (const request of this.#inFlight) request.abort();
    this.#inFlight.clear();
  }
}

async function postWithFetch(
  url: string,
  body: Uint8Array,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<HttpAnswer> {
  const response = await fetch(url, { method: 'POST', headers, body, signal });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    body: new Uint8Array(await response.arrayBuffer()),
  };
}

/** A POST through Node's `https` with the `tls` settings (CA, client certificate, server name). */
async function postWithNodeHttps(
  url: string,
  body: Uint8Array,
  headers: Record<string, string>,
  signal: AbortSignal,
  tls: TlsOptions,
): Promise<HttpAnswer> {
  const https = (await import(NODE_HTTPS)) as typeof import('node:https');
  const ca = Array.isArray(tls.ca) ? [...tls.ca] : tls.ca;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const request = https.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.byteLength) },
        signal,
        ...tls,
        ...(ca === undefined ? {} : { ca }),
      } as import('node:https').RequestOptions,
      (response) => {
        const chunks: Uint8Array[] = [];
        response.on('data', (chunk: Uint8Array) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const bytes = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.byteLength, 0));
          let position = 0;
          for (const chunk of chunks) {
            bytes.set(chunk, position);
            position += chunk.byteLength;
          }
          resolve({
            status: response.statusCode ?? 0,
            contentType: String(response.headers['content-type'] ?? ''),
            body: bytes,
          });
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
