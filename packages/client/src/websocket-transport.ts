import { WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';
import { ClientError } from './client-error.js';
import { LinkEvents } from './link-events.js';
import { openingFailure } from './link-failure.js';
import type { TlsOptions } from './tls-options.js';
import { tlsWebSocket } from './tls-options.js';
import type { FrameLink, LinkConnectOptions, LinkListener, Transport } from './transport.js';
import {
  closeSocket,
  describeCloseReason,
  detach,
  loadWebSocket,
  messageBytes,
  type WebSocketCloseEvent,
  type WebSocketConstructor,
  type WebSocketErrorEvent,
  type WebSocketImplementation,
  type WebSocketLike,
  type WebSocketMessageEvent,
} from './web-socket.js';

/** Options of {@link WebSocketTransport}. */
export interface WebSocketTransportOptions {
  /** An injected WebSocket constructor, treated as a standard WebSocket. */
  readonly webSocket?: WebSocketConstructor | undefined;
  /** TLS settings for `wss://` (Node only: opens sockets with `ws`). */
  readonly tls?: TlsOptions | undefined;
}

/**
 * `ws://` and `wss://`: each frame is one binary WebSocket message on `endpoint` + `/v1/ws`, with
 * the `ricochet.v1` subprotocol. The implementation is the injected constructor, else `ws` with
 * the TLS settings, else the runtime's own WebSocket (`ws` where there is none); loaded once, with
 * a dynamic import, so a browser bundle never loads `ws`.
 */
export class WebSocketTransport implements Transport {
  readonly name = 'ws';
  readonly stream = true;
  readonly address: string;
  /**
   * 100 MiB: the `maxPayload` the `ws` package reads by default, the lowest limit of the WebSocket
   * implementations the client runs on (a browser's or Node's own have none of their own).
   */
  readonly maxFrameBytes = 100 * 1024 * 1024;
  readonly #options: WebSocketTransportOptions;
  #implementation: Promise<WebSocketImplementation> | undefined;

  /** @param endpoint - a `ws:` or `wss:` URL; a path prefix is kept, for brokers behind a proxy. */
  constructor(endpoint: URL, options: WebSocketTransportOptions = {}) {
    const prefix = endpoint.pathname.replace(/\/+$/, '');
    this.address = `${endpoint.protocol}//${endpoint.host}${prefix}${WEBSOCKET_PATH}`;
    this.#options = options;
  }

  async connect(options: LinkConnectOptions): Promise<FrameLink> {
    const implementation = await this.#load();
    const { signal } = options;
    if (signal.aborted) throw signal.reason;
    return new Promise<FrameLink>((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = new implementation.create(this.address, WEBSOCKET_SUBPROTOCOL);
        socket.binaryType = implementation.binaryType;
      } catch (cause) {
        reject(new ClientError('CONNECTION_CLOSED', `cannot open a WebSocket to ${this.address}`, { cause }));
        return;
      }
      let socketError: unknown;
      const fail = (error: unknown): void => {
        signal.removeEventListener('abort', onAbort);
        detach(socket);
        socket.close();
        reject(error);
      };
      const onAbort = (): void => fail(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      socket.onerror = (event: WebSocketErrorEvent) => {
        // The close event follows; keep what the error said for its message.
        socketError = event.error ?? event.message;
      };
      socket.onclose = (event: WebSocketCloseEvent) => {
        fail(
          openingFailure(
            this.address,
            `the connection to ${this.address} closed before welcome (code ${event.code}${describeCloseReason(event.reason, socketError)})`,
            socketError,
          ),
        );
      };
      socket.onopen = () => {
        // The broker must select our subprotocol; a server that ignores it is not a Ricochet broker.
        if (socket.protocol !== WEBSOCKET_SUBPROTOCOL) {
          fail(
            new ClientError(
              'PROTOCOL_ERROR',
              `the server selected the subprotocol '${socket.protocol}', not '${WEBSOCKET_SUBPROTOCOL}'`,
            ),
          );
          return;
        }
        signal.removeEventListener('abort', onAbort);
        resolve(new WebSocketLink(socket));
      };
    });
  }

  /** The injected constructor, else `ws` with the TLS settings, else the runtime's; loaded once. */
  #load(): Promise<WebSocketImplementation> {
    if (this.#implementation === undefined) {
      const { webSocket, tls } = this.#options;
      if (webSocket !== undefined) {
        this.#implementation = Promise.resolve({ create: webSocket, binaryType: 'arraybuffer' });
      } else this.#implementation = tls === undefined ? loadWebSocket() : tlsWebSocket(tls);
    }
    return this.#implementation;
  }
}

/** RFC 6455's close code for a message too big to process. */
const MESSAGE_TOO_BIG = 1009;

/**
 * Whether ws refused a message past its `maxPayload`. Its close event then says 1006 (no close
 * frame came), though what happened is 1009, which the connection reports as such.
 */
function isOversizeError(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH';
}

/** An open WebSocket as a {@link FrameLink}. */
class WebSocketLink implements FrameLink {
  readonly stream = true;
  readonly #socket: WebSocketLike;
  readonly #events = new LinkEvents();

  constructor(socket: WebSocketLike) {
    this.#socket = socket;
    let socketError: unknown;
    socket.onmessage = (event: WebSocketMessageEvent) => {
      const bytes = messageBytes(event.data);
      if (bytes === undefined) this.#events.unreadable('a text message');
      else this.#events.frame(bytes);
    };
    socket.onerror = (event: WebSocketErrorEvent) => {
      // A close event always follows an error event; it reports both.
      socketError = event.error ?? event.message;
    };
    socket.onclose = (event: WebSocketCloseEvent) => {
      detach(socket);
      this.#events.close({
        code: isOversizeError(socketError) ? MESSAGE_TOO_BIG : event.code,
        reason: event.reason,
        ...(socketError === undefined ? {} : { error: socketError }),
      });
    };
  }

  listen(listener: LinkListener): void {
    this.#events.listen(listener);
  }

  send(frame: Uint8Array): void {
    if (this.#events.closed) return;
    this.#socket.send(frame);
  }

  close(code: number, reason: string, closeHandshakeTimeoutMs: number): Promise<void> {
    this.#events.mute();
    return closeSocket(this.#socket, code, reason, closeHandshakeTimeoutMs);
  }
}
