/**
 * The seam between a connection and the wire it runs over. A {@link Transport} opens
 * {@link FrameLink}s; a link carries encoded frames (the codec's bytes) both ways and reports how
 * it ended. Everything above the seam (the handshake, request correlation, the reconnect loop of
 * rule C1) is written once, in `Connection`, and is the same on every transport.
 *
 * The endpoint's scheme picks the transport (`transports.ts`): `ws://`/`wss://` a WebSocket,
 * `tcp://`/`tls://` a length-prefixed byte stream; `http://`/`https://` is request/response.
 * @see docs/protocol/transports.md
 */

/** How a link ended: a WebSocket close frame's code and reason, or the stream's close record. */
export interface LinkCloseEvent {
  /** The close code (RFC 6455 §7.4.1), e.g. 1000, 1001; 1006 when the link was cut without one. */
  readonly code: number;
  /** The peer's reason; `''` when it gave none. */
  readonly reason: string;
  /** What the runtime reported when the link broke, if anything (a socket error, a TLS refusal). */
  readonly error?: unknown;
}

/** Who a link tells about what arrives. Set with {@link FrameLink.listen}. */
export interface LinkListener {
  /** One frame's bytes, in arrival order. The bytes may view the link's buffers: decode them now. */
  onFrame(frame: Uint8Array): void;
  /**
   * Something arrived that cannot be a frame (a WebSocket text message): the link goes on, the
   * connection reports a `PROTOCOL_ERROR`.
   */
  onUnreadable(description: string): void;
  /** The link ended; called once, and nothing is called after it. */
  onClose(event: LinkCloseEvent): void;
}

/** One open link to a broker, ready to carry the `hello`. */
export interface FrameLink {
  /**
   * Whether the broker can send on this link unasked (`deliver` frames): true for streams
   * (WebSocket, TCP), false for request/response links, where every broker frame answers a request.
   */
  readonly stream: boolean;
  /**
   * Take over what arrives from now on, replacing the previous listener. Frames that arrived
   * before the first listener are handed to it first, so nothing is lost between `connect` and
   * the handshake.
   */
  listen(listener: LinkListener): void;
  /** Write one encoded frame. A frame written after the link ended is dropped. */
  send(frame: Uint8Array): void;
  /**
   * End the link with `code` and `reason` and resolve once it ended, or after
   * `closeHandshakeTimeoutMs` at the latest (the link is cut then). No listener is called for it.
   */
  close(code: number, reason: string, closeHandshakeTimeoutMs: number): Promise<void>;
}

/** What {@link Transport.connect} needs besides the endpoint. */
export interface LinkConnectOptions {
  /**
   * Stops the attempt: `connect` rejects with the signal's reason and leaves nothing open. The
   * handshake aborts it on its timeout, the connection on `close()`.
   */
  readonly signal: AbortSignal;
}

/** Opens links to the broker of one endpoint. */
export interface Transport {
  /** The scheme family, for messages and tests: `'ws'`, `'tcp'`, `'http'`. */
  readonly name: string;
  /** Whether its links are streams ({@link FrameLink.stream}); push consumption needs one. */
  readonly stream: boolean;
  /** Where the links go, as messages name it, e.g. `ws://127.0.0.1:7720/v1/ws`. */
  readonly address: string;
  /**
   * The largest frame its links read, announced in `hello.maxFrameBytes` so that the broker keeps
   * its frames below it; `undefined` where a link reads answers of any size (HTTP).
   */
  readonly maxFrameBytes?: number;
  /**
   * Open one link.
   * @throws ClientError `CONNECTION_CLOSED` (retryable) when the broker cannot be reached or the
   *   link closes while opening, `TLS_ERROR` when its certificate is refused, `PROTOCOL_ERROR`
   *   when the peer is not a Ricochet broker (e.g. a WebSocket server without `ricochet.v1`).
   */
  connect(options: LinkConnectOptions): Promise<FrameLink>;
}
