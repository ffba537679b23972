import { FLAG, FRAME_TYPE, H2_ERROR } from './http2-frames.js';

/** How a stream ended: both sides finished it, the client reset it, or its connection went. */
export type StreamEnd =
  | { readonly kind: 'finished' }
  | { readonly kind: 'reset'; readonly code: number }
  | { readonly kind: 'connectionLost' };

/** What a stream asks of its connection. */
export interface StreamConnection {
  /** Queue one frame for the connection's next write. */
  sendFrame(type: number, flags: number, streamId: number, payload?: Uint8Array): void;
  /** Queue one DATA frame whose payload is `parts`, `length` bytes in all. */
  sendData(streamId: number, parts: readonly Buffer[], length: number): void;
  /** Call the stream's {@link Http2ServerStream.flush} before the turn's frames are written. */
  flushSoon(stream: Http2ServerStream): void;
  /** Up to `wantedBytes` of the connection's send window, taken now (0 when it is spent). */
  takeSendWindow(wantedBytes: number): number;
  /** The largest DATA payload the client accepts (its SETTINGS_MAX_FRAME_SIZE). */
  readonly peerMaxFrameBytes: number;
  /** The stream has output waiting for window: resume it when the connection's grows. */
  waitForWindow(stream: Http2ServerStream): void;
  /** The stream is closed: forget it. */
  closed(stream: Http2ServerStream, end: StreamEnd): void;
  /**
   * What the stream's reader holds of its request moved by `deltaBytes`.
   * @throws Http2ConnectionError ENHANCE_YOUR_CALM past the connection's bound.
   */
  held(deltaBytes: number): void;
}

/** What the gRPC server hears of a stream; set once, when the stream opens. */
export interface StreamListeners {
  data(chunk: Buffer): void;
  /** The client half-closed: it sends no more. */
  end(): void;
  close(end: StreamEnd): void;
}

const NO_LISTENERS: StreamListeners = { data: () => undefined, end: () => undefined, close: () => undefined };

/**
 * One HTTP/2 stream on the server's side: the request's header fields as decoded, its DATA as it
 * arrives, and the answer's HEADERS, DATA and trailers, sent in that order within the windows the
 * client grants (RFC 9113 §5.2). The answer's DATA waits here when a window is spent; the trailers
 * wait behind it.
 */
export class Http2ServerStream {
  readonly id: number;
  /** The request's header fields, flat: name, value, name, value… in the order sent. */
  readonly #fields: readonly string[];
  readonly #connection: StreamConnection;
  listeners: StreamListeners = NO_LISTENERS;
  /** What the client lets this stream send, moved by WINDOW_UPDATE and SETTINGS. */
  sendWindow: number;
  /** What the client may still send on this stream (kept by the connection, which grants it). */
  receiveWindow: number;
  /** DATA bytes read since the stream's receive window was last given back (the connection's). */
  unacknowledgedBytes = 0;
  /** What the server's reader holds of this stream's request, as it last said ({@link holding}). */
  #heldBytes = 0;
  #headersSent = false;
  #remoteEnded = false;
  #localEnded = false;
  #closed = false;
  /** Answer bytes waiting for the turn's end or for window, then the trailers' block. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #pendingTrailers: Buffer | undefined;

  constructor(
    id: number,
    fields: readonly string[],
    windows: { readonly sendBytes: number; readonly receiveBytes: number },
    connection: StreamConnection,
  ) {
    this.id = id;
    this.#fields = fields;
    this.sendWindow = windows.sendBytes;
    this.receiveWindow = windows.receiveBytes;
    this.#connection = connection;
  }

  /** A request header's value (the first, for a repeated one); `undefined` when absent. */
  header(name: string): string | undefined {
    const fields = this.#fields;
    for (let at = 0; at < fields.length; at += 2) if (fields[at] === name) return fields[at + 1];
    return undefined;
  }

  get headersSent(): boolean {
    return this.#headersSent;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The answer's headers; with `endStream`, the whole answer (gRPC's trailers-only shape). */
  respond(block: Buffer, endStream: boolean): void {
    if (this.#closed || this.#headersSent) return;
    this.#headersSent = true;
    this.#connection.sendFrame(
      FRAME_TYPE.HEADERS,
      FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0),
      this.id,
      block,
    );
    if (endStream) this.#endLocal();
  }

  /**
   * Answer bytes, after the headers; sent at the end of the turn, as the windows allow. The writes
   * of one turn share DATA frames (a receive's messages, its status and the delivery timestamp).
   */
  write(bytes: Buffer): void {
    if (this.#closed || this.#localEnded || this.#pendingTrailers !== undefined || bytes.length === 0) return;
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.length;
    this.#connection.flushSoon(this);
  }

  /** The trailers (`block`), after every byte written. */
  end(block: Buffer): void {
    if (this.#closed || this.#localEnded || this.#pendingTrailers !== undefined) return;
    this.#pendingTrailers = block;
    this.#connection.flushSoon(this);
  }

  /**
   * The reader holds `bytes` of this stream's request (an unfinished message, or a request not yet
   * handled): counted against the connection's bound, and let go when the stream closes.
   * @throws Http2ConnectionError ENHANCE_YOUR_CALM when the connection's streams hold too much.
   */
  holding(bytes: number): void {
    if (this.#closed || bytes === this.#heldBytes) return;
    const delta = bytes - this.#heldBytes;
    this.#heldBytes = bytes;
    this.#connection.held(delta);
  }

  /** End the stream at once with RST_STREAM (a cancel, or an answer that cannot go on). */
  reset(code: number): void {
    if (this.#closed) return;
    this.#connection.sendFrame(FRAME_TYPE.RST_STREAM, 0, this.id, codeBytes(code));
    this.#close(code === H2_ERROR.NO_ERROR ? { kind: 'finished' } : { kind: 'reset', code });
  }

  /** Send what the windows allow now; called again by the connection when they grow. */
  flush(): void {
    const connection = this.#connection;
    while (this.#pendingBytes > 0) {
      const wanted = Math.min(this.#pendingBytes, this.sendWindow, connection.peerMaxFrameBytes);
      const granted = wanted > 0 ? connection.takeSendWindow(wanted) : 0;
      if (granted === 0) {
        connection.waitForWindow(this);
        return;
      }
      this.sendWindow -= granted;
      this.#pendingBytes -= granted;
      // As many writes as the frame holds, the last of them cut when it does not fit whole.
      const parts: Buffer[] = [];
      let left = granted;
      while (left > 0) {
        const bytes = this.#pending[0] as Buffer;
        if (bytes.length <= left) {
          parts.push(bytes);
          this.#pending.shift();
          left -= bytes.length;
        } else {
          parts.push(bytes.subarray(0, left));
          this.#pending[0] = bytes.subarray(left);
          left = 0;
        }
      }
      connection.sendData(this.id, parts, granted);
    }
    const trailers = this.#pendingTrailers;
    if (trailers === undefined) return;
    this.#pendingTrailers = undefined;
    this.#connection.sendFrame(FRAME_TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, this.id, trailers);
    this.#endLocal();
  }

  // ─── What the connection tells the stream ─────────────────────────────────────────────────────

  /** DATA from the client. */
  received(chunk: Buffer, endStream: boolean): void {
    if (chunk.length > 0) this.listeners.data(chunk);
    if (endStream) this.remoteEnded();
  }

  /** The client sent END_STREAM. */
  remoteEnded(): void {
    if (this.#remoteEnded) return;
    this.#remoteEnded = true;
    this.listeners.end();
    if (this.#localEnded) this.#close({ kind: 'finished' });
  }

  /** Whether the client may still send on this stream. */
  get receiving(): boolean {
    return !this.#remoteEnded && !this.#closed;
  }

  /** The client reset the stream, or the connection went. */
  aborted(end: StreamEnd): void {
    this.#close(end);
  }

  #endLocal(): void {
    this.#localEnded = true;
    if (this.#remoteEnded) {
      this.#close({ kind: 'finished' });
      return;
    }
    // The answer is whole before the request: the client is asked to stop sending, without error
    // (RFC 9113 §8.1), which also frees the stream's slot now.
    this.reset(H2_ERROR.NO_ERROR);
  }

  #close(end: StreamEnd): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#pendingTrailers = undefined;
    if (this.#heldBytes > 0) this.#connection.held(-this.#heldBytes);
    this.#heldBytes = 0;
    this.#connection.closed(this, end);
    this.listeners.close(end);
  }
}

function codeBytes(code: number): Buffer {
  const bytes = Buffer.allocUnsafe(4);
  bytes.writeUInt32BE(code, 0);
  return bytes;
}
