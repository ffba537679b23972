import type { Duplex } from 'node:stream';
import { HpackDecoder, HpackDecodingError } from './hpack.js';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_WINDOW_BYTES,
  FLAG,
  FRAME_TYPE,
  type Frame,
  FrameReader,
  H2_ERROR,
  Http2ConnectionError,
  LARGEST_MAX_FRAME_BYTES,
  MAX_WINDOW_BYTES,
  SETTING,
  unpadded,
} from './http2-frames.js';
import { Http2Output } from './http2-output.js';
import { ResetBudget } from './http2-reset-budget.js';
import { Http2ServerStream, type StreamConnection, type StreamEnd } from './http2-stream.js';

export interface Http2ConnectionOptions {
  /** Streams open at once (SETTINGS_MAX_CONCURRENT_STREAMS); past it a stream is refused. */
  readonly maxConcurrentStreams: number;
  /** The largest header list a request may carry (SETTINGS_MAX_HEADER_LIST_SIZE); past it, 431. */
  readonly maxHeaderListBytes: number;
  /** Streams refused in a row after which the connection is taken for a flood and ended. */
  readonly maxRefusedStreamsInARow: number;
  /**
   * What the connection's streams may hold of requests not yet whole (their readers say,
   * {@link Http2ServerStream.holding}); past it the connection ends with ENHANCE_YOUR_CALM. Flow
   * control alone does not bound it: windows are given back as bytes are read, whole or not.
   */
  readonly maxHeldBytes: number;
  /**
   * The open streams a client may reset (rapid reset, {@link ResetBudget}): a burst, then so many
   * a second. @default nghttp2's, 1,000 then 33 a second
   */
  readonly streamResets?: { readonly burst: number; readonly perSecond: number };
  /** The broker's clock, in ms: what refills the reset budget. */
  readonly now: () => number;
  /** A request's headers arrived: the stream is open (set its listeners now). */
  readonly onStream: (stream: Http2ServerStream, connection: Http2ServerConnection) => void;
  /** The connection is gone, whatever ended it. */
  readonly onClose: (connection: Http2ServerConnection) => void;
}

/**
 * What each stream may send before its bytes are read (SETTINGS_INITIAL_WINDOW_SIZE). A request is
 * one message, read as it arrives and bounded by the message limit, so the window only paces a
 * large one: it is given back as each half is read.
 */
const STREAM_WINDOW_BYTES = 1_048_576;
/** What the connection's streams together may send before their bytes are read. */
const CONNECTION_WINDOW_BYTES = 16 * 1_048_576;
/** A header block in CONTINUATION frames longer than this ends the connection (a flood). */
const MAX_HEADER_BLOCK_BYTES = 256 * 1_024;
/** The resets a client may make (nghttp2's defaults since 1.57, CVE-2023-44487). */
const DEFAULT_STREAM_RESETS = { burst: 1_000, perSecond: 33 };
/** How long a connection ended for an error waits for its peer to close before it is cut. */
const CLOSE_GRACE_MS = 1_000;

const EMPTY = Buffer.alloc(0);
/** `:status: 431`, as a header block (static table entry 8 is 200; 431 is written out). */
const HEADERS_TOO_LARGE = Buffer.from([0x08, 0x03, 0x34, 0x33, 0x31]);

/**
 * The server's side of one HTTP/2 connection (RFC 9113), framed by the broker itself. Node's
 * `node:http2` built a stream object, its events and header objects both ways for every call,
 * which cost more broker CPU than the call's own work on RocketMQ's one-message calls (issue 44);
 * here a call costs its frames.
 *
 * What it keeps of HTTP/2: the client preface and SETTINGS (its stream limit, windows, frame size
 * and header list size announced; the client's obeyed and acknowledged), HPACK for requests
 * (`hpack.ts`; answers use literals only, so the client's table for them stays empty), flow control
 * both ways, PING, RST_STREAM both ways, GOAWAY both ways, refusal past the stream limit
 * (REFUSED_STREAM, which clients retry) and an end to a flood of them, and the connection errors
 * of §5.4.1 for a peer that breaks the protocol. No server push, no priorities (ignored, as §5.3.2
 * allows). Frames written in one turn of the event loop leave in one socket write.
 *
 * What a client can make it hold is bounded twice, where `node:http2` had its session memory:
 * requests not yet whole (`maxHeldBytes`, as the streams' readers report them), and answers left
 * unread (the socket is not read meanwhile, and cut past 256 MiB).
 */
export class Http2ServerConnection implements StreamConnection {
  readonly #socket: Duplex;
  readonly #options: Http2ConnectionOptions;
  readonly #reader = new FrameReader(DEFAULT_MAX_FRAME_BYTES);
  readonly #decoder: HpackDecoder;
  readonly #streams = new Map<number, Http2ServerStream>();
  /** Streams whose answer waits for the connection's send window, in the order they asked. */
  readonly #waitingForWindow = new Set<Http2ServerStream>();
  peerMaxFrameBytes = DEFAULT_MAX_FRAME_BYTES;
  /** What the connection writes, a turn's frames at a time. */
  readonly #output: Http2Output;
  /** Bytes of the client preface still to be read; 0 once it was. */
  #prefaceLeft = CLIENT_PREFACE.length;
  #settingsSent = false;
  /** A header block still arriving in CONTINUATION frames. */
  #headerBlock: { streamId: number; endStream: boolean; parts: Buffer[]; bytes: number } | undefined;
  /** The highest stream id the client opened (refused ones too). */
  #lastStreamId = 0;
  #sendWindow = DEFAULT_WINDOW_BYTES;
  #peerInitialWindow = DEFAULT_WINDOW_BYTES;
  /** DATA bytes read since the connection's window was last given back. */
  #unacknowledgedBytes = 0;
  #refusedInARow = 0;
  /** Open streams the client may still reset before it is taken for a rapid-reset attack. */
  readonly #resets: ResetBudget;
  /** What the streams' readers hold of requests not yet whole. */
  #heldBytes = 0;
  /** GOAWAY sent: no new stream is served, and the connection ends once its streams have. */
  #goingAway = false;
  #ended = false;
  readonly #closed: Promise<void>;

  constructor(socket: Duplex, options: Http2ConnectionOptions) {
    this.#socket = socket;
    this.#output = new Http2Output(socket);
    this.#options = options;
    this.#resets = new ResetBudget({
      ...(options.streamResets ?? DEFAULT_STREAM_RESETS),
      now: options.now,
    });
    this.#decoder = new HpackDecoder({
      maxTableBytes: 4_096,
      maxHeaderListBytes: options.maxHeaderListBytes,
    });
    this.#closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', () => socket.destroy());
    socket.once('close', () => this.#lost());
    // Answers are small and written once per turn: Nagle's algorithm would hold one back until
    // the client acknowledged the last (up to its delayed-ACK time, 40 ms on Linux).
    (socket as Duplex & { setNoDelay?: (noDelay: boolean) => void }).setNoDelay?.(true);
    // The listener paused it to look at its first bytes (TLS or not), and put them back.
    socket.resume();
  }

  /** Open streams. */
  get streamCount(): number {
    return this.#streams.size;
  }

  /** Whether the socket is left unread until the client reads its answers. */
  get readingPaused(): boolean {
    return this.#output.readingPaused;
  }

  /**
   * End gracefully: GOAWAY tells the client no new stream is served; those open may finish, and
   * the connection ends once they have. Resolves when the socket is closed.
   */
  close(): Promise<void> {
    if (!this.#goingAway && !this.#ended) {
      this.#goingAway = true;
      this.#sendSettingsOnce();
      this.#goAway(H2_ERROR.NO_ERROR, '');
      if (this.#streams.size === 0) this.#end();
    }
    return this.#closed;
  }

  /** Cut the connection now. */
  destroy(): void {
    this.#socket.destroy();
  }

  // ─── StreamConnection: what streams ask ───────────────────────────────────────────────────────

  sendFrame(type: number, flags: number, streamId: number, payload: Uint8Array = EMPTY): void {
    this.#output.frame(type, flags, streamId, payload);
  }

  sendData(streamId: number, parts: readonly Buffer[], length: number): void {
    this.#output.data(streamId, parts, length);
  }

  flushSoon(stream: Http2ServerStream): void {
    this.#output.flushSoon(stream);
  }

  takeSendWindow(wantedBytes: number): number {
    const granted = Math.max(0, Math.min(wantedBytes, this.#sendWindow));
    this.#sendWindow -= granted;
    return granted;
  }

  waitForWindow(stream: Http2ServerStream): void {
    this.#waitingForWindow.add(stream);
  }

  held(deltaBytes: number): void {
    this.#heldBytes += deltaBytes;
    if (deltaBytes > 0 && this.#heldBytes > this.#options.maxHeldBytes) {
      throw new Http2ConnectionError(
        H2_ERROR.ENHANCE_YOUR_CALM,
        `requests not yet whole hold more than ${this.#options.maxHeldBytes} bytes`,
      );
    }
  }

  closed(stream: Http2ServerStream, _end: StreamEnd): void {
    this.#streams.delete(stream.id);
    this.#waitingForWindow.delete(stream);
    this.#output.forget(stream);
    if (this.#goingAway && this.#streams.size === 0) this.#end();
  }

  // ─── Reading ──────────────────────────────────────────────────────────────────────────────────

  #read(chunk: Buffer): void {
    if (this.#ended) return;
    try {
      this.#sendSettingsOnce();
      let bytes = chunk;
      if (this.#prefaceLeft > 0) {
        const at = CLIENT_PREFACE.length - this.#prefaceLeft;
        const length = Math.min(this.#prefaceLeft, bytes.length);
        if (!bytes.subarray(0, length).equals(CLIENT_PREFACE.subarray(at, at + length))) {
          throw new Http2ConnectionError(H2_ERROR.PROTOCOL_ERROR, 'not an HTTP/2 client preface');
        }
        this.#prefaceLeft -= length;
        bytes = bytes.subarray(length);
      }
      if (bytes.length > 0) this.#reader.push(bytes, (frame) => this.#onFrame(frame));
      if (this.#unacknowledgedBytes >= CONNECTION_WINDOW_BYTES / 2) {
        this.sendFrame(FRAME_TYPE.WINDOW_UPDATE, 0, 0, uint32(this.#unacknowledgedBytes));
        this.#unacknowledgedBytes = 0;
      }
    } catch (error) {
      this.#failed(error);
    }
  }

  #onFrame(frame: Frame): void {
    if (this.#ended) return;
    const pending = this.#headerBlock;
    if (
      pending !== undefined &&
      (frame.type !== FRAME_TYPE.CONTINUATION || frame.streamId !== pending.streamId)
    ) {
      throw protocolError('a header block was cut by another frame');
    }
    switch (frame.type) {
      case FRAME_TYPE.DATA:
        this.#onData(frame);
        return;
      case FRAME_TYPE.HEADERS:
        this.#onHeaders(frame);
        return;
      case FRAME_TYPE.CONTINUATION:
        this.#onContinuation(frame);
        return;
      case FRAME_TYPE.PRIORITY:
        if (frame.streamId === 0) throw protocolError('PRIORITY on stream 0');
        if (frame.payload.length !== 5) throw frameSizeError('PRIORITY');
        return;
      case FRAME_TYPE.RST_STREAM:
        this.#onReset(frame);
        return;
      case FRAME_TYPE.SETTINGS:
        this.#onSettings(frame);
        return;
      case FRAME_TYPE.PUSH_PROMISE:
        throw protocolError('a client may not push');
      case FRAME_TYPE.PING:
        if (frame.streamId !== 0) throw protocolError('PING on a stream');
        if (frame.payload.length !== 8) throw frameSizeError('PING');
        if (!(frame.flags & FLAG.ACK))
          this.sendFrame(FRAME_TYPE.PING, FLAG.ACK, 0, Buffer.from(frame.payload));
        return;
      case FRAME_TYPE.GOAWAY:
        if (frame.streamId !== 0) throw protocolError('GOAWAY on a stream');
        // The client opens no more streams; those open finish, and it closes the connection.
        return;
      case FRAME_TYPE.WINDOW_UPDATE:
        this.#onWindowUpdate(frame);
        return;
      default:
        // Frame types this server does not know are ignored (§4.1, §5.5).
        return;
    }
  }

  #onData(frame: Frame): void {
    const { streamId, payload } = frame;
    if (streamId === 0) throw protocolError('DATA on stream 0');
    if (streamId > this.#lastStreamId) throw protocolError('DATA on a stream never opened');
    // Padding included, every byte counts against both windows (§6.9.1).
    this.#unacknowledgedBytes += payload.length;
    const stream = this.#streams.get(streamId);
    // A stream already closed (answered early, reset): its bytes in flight are dropped.
    if (stream === undefined) return;
    if (!stream.receiving) {
      stream.reset(H2_ERROR.STREAM_CLOSED);
      return;
    }
    stream.receiveWindow -= payload.length;
    if (stream.receiveWindow < 0) {
      stream.reset(H2_ERROR.FLOW_CONTROL_ERROR);
      return;
    }
    const endStream = (frame.flags & FLAG.END_STREAM) !== 0;
    stream.unacknowledgedBytes += payload.length;
    if (!endStream && stream.unacknowledgedBytes >= STREAM_WINDOW_BYTES / 2) {
      this.sendFrame(FRAME_TYPE.WINDOW_UPDATE, 0, streamId, uint32(stream.unacknowledgedBytes));
      stream.receiveWindow += stream.unacknowledgedBytes;
      stream.unacknowledgedBytes = 0;
    }
    stream.received(unpadded(frame), endStream);
  }

  #onHeaders(frame: Frame): void {
    if (frame.streamId === 0) throw protocolError('HEADERS on stream 0');
    const fragment = unpadded(frame);
    const endStream = (frame.flags & FLAG.END_STREAM) !== 0;
    if (frame.flags & FLAG.END_HEADERS) {
      this.#headersComplete(frame.streamId, endStream, fragment);
      return;
    }
    this.#headerBlock = { streamId: frame.streamId, endStream, parts: [fragment], bytes: fragment.length };
  }

  #onContinuation(frame: Frame): void {
    const pending = this.#headerBlock;
    if (pending === undefined) throw protocolError('CONTINUATION without a header block');
    pending.parts.push(frame.payload);
    pending.bytes += frame.payload.length;
    if (pending.bytes > MAX_HEADER_BLOCK_BYTES) {
      throw new Http2ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, 'a header block past 256 KiB');
    }
    if (!(frame.flags & FLAG.END_HEADERS)) return;
    this.#headerBlock = undefined;
    this.#headersComplete(pending.streamId, pending.endStream, Buffer.concat(pending.parts, pending.bytes));
  }

  #headersComplete(streamId: number, endStream: boolean, block: Buffer): void {
    // Decoded whatever becomes of the stream: the table must stay in step with the client's.
    const decoded = this.#decoder.decode(block);
    const open = this.#streams.get(streamId);
    if (open !== undefined) {
      // Trailers from the client: they must end its side (§8.1).
      if (!endStream) open.reset(H2_ERROR.PROTOCOL_ERROR);
      else open.remoteEnded();
      return;
    }
    if (streamId % 2 === 0) throw protocolError('a client stream with an even id');
    if (streamId <= this.#lastStreamId) {
      throw new Http2ConnectionError(H2_ERROR.STREAM_CLOSED, `HEADERS on closed stream ${streamId}`);
    }
    this.#lastStreamId = streamId;
    // After GOAWAY, streams past the last one it named are ignored; the client sends them elsewhere.
    if (this.#goingAway) return;
    if (this.#streams.size >= this.#options.maxConcurrentStreams) {
      this.sendFrame(FRAME_TYPE.RST_STREAM, 0, streamId, uint32(H2_ERROR.REFUSED_STREAM));
      if (++this.#refusedInARow > this.#options.maxRefusedStreamsInARow) {
        throw new Http2ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, 'too many streams refused in a row');
      }
      return;
    }
    this.#refusedInARow = 0;
    if (decoded.tooLarge) {
      this.sendFrame(FRAME_TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, streamId, HEADERS_TOO_LARGE);
      if (!endStream) this.sendFrame(FRAME_TYPE.RST_STREAM, 0, streamId, uint32(H2_ERROR.NO_ERROR));
      return;
    }
    const stream = new Http2ServerStream(
      streamId,
      decoded.fields,
      { sendBytes: this.#peerInitialWindow, receiveBytes: STREAM_WINDOW_BYTES },
      this,
    );
    this.#streams.set(streamId, stream);
    this.#options.onStream(stream, this);
    if (endStream) stream.remoteEnded();
  }

  #onReset(frame: Frame): void {
    if (frame.streamId === 0) throw protocolError('RST_STREAM on stream 0');
    if (frame.payload.length !== 4) throw frameSizeError('RST_STREAM');
    if (frame.streamId > this.#lastStreamId) throw protocolError('RST_STREAM on a stream never opened');
    const stream = this.#streams.get(frame.streamId);
    if (stream === undefined) return;
    stream.aborted({ kind: 'reset', code: frame.payload.readUInt32BE(0) });
    if (!this.#resets.take()) {
      throw new Http2ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, 'too many streams reset (rapid reset)');
    }
  }

  #onSettings(frame: Frame): void {
    if (frame.streamId !== 0) throw protocolError('SETTINGS on a stream');
    if (frame.flags & FLAG.ACK) {
      if (frame.payload.length !== 0) throw frameSizeError('SETTINGS acknowledgement');
      return;
    }
    if (frame.payload.length % 6 !== 0) throw frameSizeError('SETTINGS');
    for (let at = 0; at < frame.payload.length; at += 6) {
      const value = frame.payload.readUInt32BE(at + 2);
      switch (frame.payload.readUInt16BE(at)) {
        case SETTING.ENABLE_PUSH:
          if (value > 1) throw protocolError('ENABLE_PUSH past 1');
          break;
        case SETTING.INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW_BYTES) {
            throw new Http2ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, 'an initial window past 2^31-1');
          }
          // A new initial window moves every open stream's by the difference (§6.9.2).
          const delta = value - this.#peerInitialWindow;
          this.#peerInitialWindow = value;
          for (const stream of this.#streams.values()) stream.sendWindow += delta;
          break;
        }
        case SETTING.MAX_FRAME_SIZE:
          if (value < DEFAULT_MAX_FRAME_BYTES || value > LARGEST_MAX_FRAME_BYTES) {
            throw protocolError('MAX_FRAME_SIZE out of range');
          }
          this.peerMaxFrameBytes = value;
          break;
        default:
          // HEADER_TABLE_SIZE bounds a table the answers never use; the others concern the client.
          break;
      }
    }
    this.sendFrame(FRAME_TYPE.SETTINGS, FLAG.ACK, 0);
    for (const stream of [...this.#streams.values()]) stream.flush();
  }

  #onWindowUpdate(frame: Frame): void {
    if (frame.payload.length !== 4) throw frameSizeError('WINDOW_UPDATE');
    const increment = frame.payload.readUInt32BE(0) & MAX_WINDOW_BYTES;
    if (frame.streamId === 0) {
      if (increment === 0) throw protocolError('a connection WINDOW_UPDATE of 0');
      this.#sendWindow += increment;
      if (this.#sendWindow > MAX_WINDOW_BYTES) {
        throw new Http2ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, 'a connection window past 2^31-1');
      }
      const waiting = [...this.#waitingForWindow];
      this.#waitingForWindow.clear();
      for (const stream of waiting) stream.flush();
      return;
    }
    const stream = this.#streams.get(frame.streamId);
    if (stream === undefined) return;
    if (increment === 0) {
      stream.reset(H2_ERROR.PROTOCOL_ERROR);
      return;
    }
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW_BYTES) {
      stream.reset(H2_ERROR.FLOW_CONTROL_ERROR);
      return;
    }
    stream.flush();
  }

  // ─── Writing and ending ───────────────────────────────────────────────────────────────────────

  /** The server's SETTINGS and its larger connection window, before anything else it sends. */
  #sendSettingsOnce(): void {
    if (this.#settingsSent) return;
    this.#settingsSent = true;
    const settings = Buffer.allocUnsafe(18);
    settings.writeUInt16BE(SETTING.MAX_CONCURRENT_STREAMS, 0);
    settings.writeUInt32BE(this.#options.maxConcurrentStreams, 2);
    settings.writeUInt16BE(SETTING.INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(STREAM_WINDOW_BYTES, 8);
    settings.writeUInt16BE(SETTING.MAX_HEADER_LIST_SIZE, 12);
    settings.writeUInt32BE(this.#options.maxHeaderListBytes, 14);
    this.sendFrame(FRAME_TYPE.SETTINGS, 0, 0, settings);
    this.sendFrame(FRAME_TYPE.WINDOW_UPDATE, 0, 0, uint32(CONNECTION_WINDOW_BYTES - DEFAULT_WINDOW_BYTES));
  }

  #goAway(code: number, reason: string): void {
    const payload = Buffer.allocUnsafe(8 + Buffer.byteLength(reason));
    payload.writeUInt32BE(this.#lastStreamId, 0);
    payload.writeUInt32BE(code, 4);
    payload.write(reason, 8);
    this.sendFrame(FRAME_TYPE.GOAWAY, 0, 0, payload);
  }

  /** The peer broke the protocol (or a bug threw): GOAWAY with the reason, then the end. */
  #failed(error: unknown): void {
    const code =
      error instanceof Http2ConnectionError
        ? error.code
        : error instanceof HpackDecodingError
          ? H2_ERROR.COMPRESSION_ERROR
          : H2_ERROR.INTERNAL_ERROR;
    this.#goAway(code, error instanceof Error ? error.message : 'internal error');
    this.#end();
  }

  /** Write what is queued, half-close, and cut the socket if the peer does not close it soon. */
  #end(): void {
    if (this.#ended) return;
    this.#output.end();
    this.#ended = true;
    this.#abortStreams();
    this.#socket.end();
    const cut = setTimeout(() => this.#socket.destroy(), CLOSE_GRACE_MS);
    cut.unref();
    this.#socket.once('close', () => clearTimeout(cut));
  }

  #lost(): void {
    this.#ended = true;
    this.#output.end();
    this.#abortStreams();
    this.#options.onClose(this);
  }

  #abortStreams(): void {
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    this.#waitingForWindow.clear();
    for (const stream of streams) stream.aborted({ kind: 'connectionLost' });
  }
}

function uint32(value: number): Buffer {
  const bytes = Buffer.allocUnsafe(4);
  bytes.writeUInt32BE(value, 0);
  return bytes;
}

function protocolError(message: string): Http2ConnectionError {
  return new Http2ConnectionError(H2_ERROR.PROTOCOL_ERROR, message);
}

function frameSizeError(frameName: string): Http2ConnectionError {
  return new Http2ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, `a ${frameName} frame of the wrong length`);
}
