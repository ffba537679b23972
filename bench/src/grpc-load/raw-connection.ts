import type { Socket } from 'node:net';
import { grpcMessagesOf } from './grpc-messages.js';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME,
  DEFAULT_WINDOW,
  FLAG,
  FRAME,
  FRAME_PREFIX_BYTES,
  frame,
  hpackLiteral,
  MAX_WINDOW,
  REFUSED_STREAM,
  RequestFieldEncoder,
  SETTING,
  STATIC,
  windowUpdate,
} from './http2-frames.js';

/** The service every RocketMQ 5 client calls; a method's path is this plus `/<Method>`. */
const SERVICE_PATH = '/apache.rocketmq.v2.MessagingService/';
/**
 * Every call's deadline, as the official clients send one. Theirs is 3 s; 1,000 calls queued on a
 * loaded two-core machine can wait longer than that, and a throughput run should not fail on it.
 */
const CALL_DEADLINE = '30S';

/** One call of the client: its method, its framed request, and where its answer goes. */
export interface Call {
  readonly method: string;
  readonly body: Buffer;
  readonly resolve: (messages: Buffer[]) => void;
  readonly reject: (error: Error) => void;
}

interface OpenStream {
  readonly id: number;
  readonly call: Call;
  /** The request body's bytes not yet sent (flow control may hold them back). */
  unsent: Buffer;
  /** What the server lets this stream send (its initial window, moved by WINDOW_UPDATE). */
  sendWindow: number;
  readonly chunks: Buffer[];
  /** A HEADERS frame with END_STREAM whose block goes on in CONTINUATION frames. */
  endsAfterHeaders: boolean;
}

/**
 * One HTTP/2 connection of the load generator, framed by hand. `node:http2`'s client cost more CPU
 * per call than the broker serving it (a stream object, its events, header objects both ways), so
 * the load generator, not the broker, set the gRPC rows' rate. Here a call is two frames out (its
 * HEADERS, pre-encoded but for the request id, and one DATA) and the answer's DATA gathered by
 * stream id; the frames of one turn leave in one socket write.
 *
 * It reads what a client must to keep a connection healthy: SETTINGS (acknowledged; the server's
 * stream limit, initial window and frame size obeyed), PING (answered), WINDOW_UPDATE (flow control
 * on what it sends), RST_STREAM (REFUSED_STREAM: the call is sent again, as gRPC clients do, since
 * the server did not process it) and GOAWAY. It opens the largest windows HTTP/2 allows for what it
 * receives and gives the connection's back as it reads. Header blocks are not decoded (that would
 * need HPACK's Huffman code and dynamic table): an answer is its DATA, and a call answered without
 * a message (a gRPC error is trailers-only) fails. The RocketMQ answers carry their own status in
 * the message, which the workloads check.
 */
export class RawConnection {
  readonly #socket: Socket;
  readonly #streams = new Map<number, OpenStream>();
  /** Calls waiting for the server's stream limit to admit them, in order. */
  readonly #waiting: Call[] = [];
  /** Streams whose request body waits for window, in order. */
  readonly #blocked: OpenStream[] = [];
  readonly #out: Buffer[] = [];
  readonly #onRefused: (call: Call) => void;
  readonly #authority: string;
  /**
   * What every request sends besides its path and request id, as Apache's Node client does:
   * content type, trailers, deadline, and its x-mq-* headers (x-mq-date-time is checked only with
   * authentication, off in the bench).
   */
  readonly #fixedFields: readonly (readonly [string, string])[];
  readonly #fields = new RequestFieldEncoder();
  /** Each method's header block but its request id, valid while no field was inserted since. */
  readonly #headerBlocks = new Map<string, { readonly block: Buffer; readonly inserted: number }>();
  #flushScheduled = false;
  #received: Buffer = Buffer.alloc(0);
  #nextStreamId = 1;
  #requestId = 0;
  #sendWindow = DEFAULT_WINDOW;
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxStreams = Number.POSITIVE_INFINITY;
  #peerMaxFrame = DEFAULT_MAX_FRAME;
  /** DATA bytes read since the connection's receive window was last given back. */
  #unacknowledged = 0;
  #failure: Error | undefined;

  constructor(socket: Socket, authority: string, clientId: string, onRefused: (call: Call) => void) {
    this.#socket = socket;
    this.#onRefused = onRefused;
    // What every request sends, as Apache's Node client does: content type, trailers, deadline,
    // and its x-mq-* headers (x-mq-date-time is checked only with authentication, off in the bench).
    this.#fixedFields = [
      ['content-type', 'application/grpc'],
      ['te', 'trailers'],
      ['grpc-timeout', CALL_DEADLINE],
      ['x-mq-protocol', 'v2'],
      ['x-mq-client-id', clientId],
      ['x-mq-language', 'HTTP'],
      ['x-mq-client-version', '5.0.0'],
      ['x-mq-namespace', ''],
      ['x-mq-date-time', new Date().toISOString().replace(/[-:]|\.\d+/g, '')],
    ];
    this.#authority = authority;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => this.#fail(new Error('the HTTP/2 connection closed')));
    const settings = Buffer.alloc(18);
    settings.writeUInt16BE(SETTING.ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(SETTING.INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(MAX_WINDOW, 8);
    settings.writeUInt16BE(SETTING.MAX_CONCURRENT_STREAMS, 12);
    settings.writeUInt32BE(0, 14);
    this.#queue(CLIENT_PREFACE);
    this.#queue(frame(FRAME.SETTINGS, 0, 0, settings));
    this.#queue(windowUpdate(0, MAX_WINDOW - DEFAULT_WINDOW));
  }

  call(call: Call): void {
    if (this.#failure !== undefined) call.reject(this.#failure);
    else if (this.#streams.size >= this.#peerMaxStreams) this.#waiting.push(call);
    else this.#open(call);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#socket.destroyed) resolve();
      else this.#socket.end(() => resolve());
      this.#socket.destroySoon();
    });
  }

  #open(call: Call): void {
    const streamId = this.#nextStreamId;
    this.#nextStreamId += 2;
    const block = Buffer.concat([
      this.#headerBlockOf(call.method),
      hpackLiteral('x-mq-request-id', String(this.#requestId++)),
    ]);
    this.#queue(frame(FRAME.HEADERS, FLAG.END_HEADERS, streamId, block));
    const stream: OpenStream = {
      id: streamId,
      call,
      unsent: call.body,
      sendWindow: this.#peerInitialWindow,
      chunks: [],
      endsAfterHeaders: false,
    };
    this.#streams.set(streamId, stream);
    this.#blocked.push(stream);
    this.#sendBodies();
  }

  /** A request's header block but its request id: pseudo-header fields first (RFC 9113 §8.3). */
  #headerBlockOf(method: string): Buffer {
    const cached = this.#headerBlocks.get(method);
    if (cached !== undefined && cached.inserted === this.#fields.inserted) return cached.block;
    const before = this.#fields.inserted;
    const block = Buffer.concat([
      Buffer.from([0x80 | STATIC.METHOD_POST, 0x80 | STATIC.SCHEME_HTTP]),
      this.#fields.indexed(':authority', this.#authority),
      this.#fields.indexed(':path', SERVICE_PATH + method),
      ...this.#fixedFields.map(([name, value]) => this.#fields.indexed(name, value)),
    ]);
    // A block that inserted fields is sent once; the next request refers to them by index.
    if (this.#fields.inserted === before) this.#headerBlocks.set(method, { block, inserted: before });
    return block;
  }

  /** Send the request bodies the windows allow, in the order the calls opened. */
  #sendBodies(): void {
    while (this.#blocked.length > 0) {
      const stream = this.#blocked[0] as OpenStream;
      if (this.#streams.get(stream.id) !== stream) {
        // Reset or refused before its body went: nothing more to send for it.
        this.#blocked.shift();
        continue;
      }
      const size = Math.min(stream.unsent.length, stream.sendWindow, this.#sendWindow, this.#peerMaxFrame);
      if (size < stream.unsent.length && size <= 0) return;
      const last = size === stream.unsent.length;
      this.#queue(frame(FRAME.DATA, last ? FLAG.END_STREAM : 0, stream.id, stream.unsent.subarray(0, size)));
      stream.unsent = stream.unsent.subarray(size);
      stream.sendWindow -= size;
      this.#sendWindow -= size;
      if (last) this.#blocked.shift();
    }
  }

  #read(chunk: Buffer): void {
    let buffer = this.#received.length === 0 ? chunk : Buffer.concat([this.#received, chunk]);
    while (buffer.length >= FRAME_PREFIX_BYTES) {
      const length = buffer.readUIntBE(0, 3);
      if (buffer.length < FRAME_PREFIX_BYTES + length) break;
      const type = buffer[3] as number;
      const flags = buffer[4] as number;
      const streamId = buffer.readUInt32BE(5) & MAX_WINDOW;
      const payload = buffer.subarray(FRAME_PREFIX_BYTES, FRAME_PREFIX_BYTES + length);
      buffer = buffer.subarray(FRAME_PREFIX_BYTES + length);
      this.#onFrame(type, flags, streamId, payload);
    }
    this.#received = buffer;
    if (this.#unacknowledged >= MAX_WINDOW / 2) {
      this.#queue(windowUpdate(0, this.#unacknowledged));
      this.#unacknowledged = 0;
    }
  }

  #onFrame(type: number, flags: number, streamId: number, payload: Buffer): void {
    switch (type) {
      case FRAME.DATA: {
        this.#unacknowledged += payload.length;
        const stream = this.#streams.get(streamId);
        const padding = flags & FLAG.PADDED ? (payload[0] as number) : -1;
        if (stream !== undefined) {
          stream.chunks.push(padding < 0 ? payload : payload.subarray(1, payload.length - padding));
        }
        if (flags & FLAG.END_STREAM) this.#finish(streamId);
        return;
      }
      case FRAME.HEADERS:
      case FRAME.CONTINUATION: {
        const stream = this.#streams.get(streamId);
        if (stream === undefined) return;
        if (type === FRAME.HEADERS && flags & FLAG.END_STREAM) stream.endsAfterHeaders = true;
        if (flags & FLAG.END_HEADERS && stream.endsAfterHeaders) this.#finish(streamId);
        return;
      }
      case FRAME.RST_STREAM: {
        const stream = this.#streams.get(streamId);
        if (stream === undefined) return;
        this.#close(streamId);
        const code = payload.readUInt32BE(0);
        if (code === REFUSED_STREAM) this.#onRefused(stream.call);
        else
          stream.call.reject(new Error(`${stream.call.method}: the server reset the stream (code ${code})`));
        return;
      }
      case FRAME.SETTINGS:
        if (flags & FLAG.ACK) return;
        for (let at = 0; at + 6 <= payload.length; at += 6)
          this.#setting(payload.readUInt16BE(at), payload.readUInt32BE(at + 2));
        this.#queue(frame(FRAME.SETTINGS, FLAG.ACK, 0));
        this.#admitWaiting();
        this.#sendBodies();
        return;
      case FRAME.PING:
        if (!(flags & FLAG.ACK)) this.#queue(frame(FRAME.PING, FLAG.ACK, 0, payload));
        return;
      case FRAME.WINDOW_UPDATE: {
        const increment = payload.readUInt32BE(0) & MAX_WINDOW;
        if (streamId === 0) this.#sendWindow += increment;
        else {
          const stream = this.#streams.get(streamId);
          if (stream !== undefined) stream.sendWindow += increment;
        }
        this.#sendBodies();
        return;
      }
      case FRAME.GOAWAY:
        this.#fail(new Error(`the server ended the connection (GOAWAY code ${payload.readUInt32BE(4)})`));
        this.#socket.destroy();
        return;
      case FRAME.PUSH_PROMISE:
        // Refused in the first SETTINGS (ENABLE_PUSH 0): a server that sends one breaks the protocol.
        this.#fail(new Error('the server sent PUSH_PROMISE, which this client refused'));
        this.#socket.destroy();
        return;
      default:
        // PRIORITY, and frame types this client does not know, are ignored (RFC 9113 §4.1, §5.5).
        return;
    }
  }

  #setting(id: number, value: number): void {
    if (id === SETTING.MAX_CONCURRENT_STREAMS) this.#peerMaxStreams = value;
    else if (id === SETTING.MAX_FRAME_SIZE) this.#peerMaxFrame = value;
    else if (id === SETTING.INITIAL_WINDOW_SIZE) {
      // A new initial window moves every open stream's window by the difference (§6.9.2).
      const delta = value - this.#peerInitialWindow;
      this.#peerInitialWindow = value;
      for (const stream of this.#streams.values()) stream.sendWindow += delta;
    }
  }

  #finish(streamId: number): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) return;
    this.#close(streamId);
    const { call, chunks } = stream;
    try {
      const messages = grpcMessagesOf(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
      if (messages.length === 0) throw new Error(`${call.method}: answered without a message (a gRPC error)`);
      call.resolve(messages);
    } catch (error) {
      call.reject(error as Error);
    }
  }

  #close(streamId: number): void {
    this.#streams.delete(streamId);
    this.#admitWaiting();
  }

  #admitWaiting(): void {
    while (this.#waiting.length > 0 && this.#streams.size < this.#peerMaxStreams) {
      this.#open(this.#waiting.shift() as Call);
    }
  }

  #queue(bytes: Buffer): void {
    this.#out.push(bytes);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    process.nextTick(() => {
      this.#flushScheduled = false;
      const out = this.#out.splice(0);
      if (!this.#socket.destroyed)
        this.#socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out));
    });
  }

  #fail(error: Error): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    for (const stream of this.#streams.values()) stream.call.reject(error);
    for (const call of this.#waiting.splice(0)) call.reject(error);
    this.#streams.clear();
  }
}
