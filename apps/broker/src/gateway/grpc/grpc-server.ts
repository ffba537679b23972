import type { Duplex } from 'node:stream';
import { gunzipSync, inflateSync } from 'node:zlib';
import { type FramedMessage, GRPC_STATUS, GrpcFramingError, MessageReader } from './grpc-framing.js';
import {
  answerHttpStatus,
  answerStatus,
  type GrpcCall,
  type GrpcInbound,
  type GrpcWriter,
  StreamCall,
} from './grpc-stream-call.js';
import { Http2ServerConnection } from './http2/http2-connection.js';
import type { Http2ServerStream, StreamEnd, StreamListeners } from './http2/http2-stream.js';

/**
 * A method's wire shape and codec, as proto-loader describes one (its `MethodDefinition` fits):
 * the server needs nothing else of a schema.
 */
export interface GrpcMethodCodec {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  requestDeserialize(bytes: Buffer): unknown;
  responseSerialize(value: never): Buffer | Uint8Array;
  /** The answer as a whole gRPC message, prefix and bytes, for a codec that writes it so. */
  responseFrame?(value: never): Buffer;
}

/**
 * The handlers of a service by method name: a unary one answers once; a server-streaming one
 * writes and ends; a bidirectional one is given the writer and returns what reads the client's
 * stream.
 */
export type GrpcHandler =
  | { readonly kind: 'unary'; handle(request: never, call: GrpcCall): Promise<object> }
  | {
      readonly kind: 'serverStream';
      handle(request: never, call: GrpcCall, out: GrpcWriter<never>): void;
    }
  | {
      readonly kind: 'bidi';
      handle(call: GrpcCall, out: GrpcWriter<never>): GrpcInbound<never>;
    };

export interface GrpcServerOptions {
  /** The service's methods by name, and their handlers by the same names. */
  readonly methods: Readonly<Record<string, GrpcMethodCodec>>;
  readonly handlers: Readonly<Record<string, GrpcHandler>>;
  /** The longest message read or written; past it a call ends RESOURCE_EXHAUSTED. */
  readonly maxMessageBytes: number;
  /** Concurrent calls per connection (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS). */
  readonly maxConcurrentStreams: number;
  /** What a handler's throw is logged as: handlers answer their own failures, so it is a bug. */
  readonly onHandlerError: (error: unknown) => void;
  readonly now: () => number;
}

/**
 * What one connection's calls may hold of requests not yet whole, as `node:http2`'s session memory
 * bound did: a client that starts many large messages and finishes none loses its connection
 * there, instead of holding the broker's memory (each call alone stops at the message limit).
 */
const MAX_HELD_REQUEST_BYTES = 256 * 1_048_576;
/** Streams refused in a row after which a connection is taken for a flood and ended. */
const MAX_REFUSED_STREAMS_IN_A_ROW = 10_000;
/**
 * The largest header list a call may carry. RocketMQ's clients send about 600 bytes; this is
 * nghttp2's default, which served them before.
 */
const MAX_HEADER_LIST_BYTES = 65_536;

/**
 * A gRPC server of the broker's own, on HTTP/2 framed by the broker itself (issue 44 item 2).
 * grpc-js served the RocketMQ front door at about 12× the broker CPU per message of the own
 * protocol: its per-call machinery (Metadata objects, call and stream wrappers, interceptors,
 * per-call timers). On `node:http2` alone it was still 7.5×: profiled, a stream object, its events
 * and header objects both ways cost more than the call's own work. Here a call costs its frames:
 * its request's HEADERS decoded (`http2/hpack.ts`), its DATA, and an answer of pre-encoded header
 * blocks around one DATA frame, written with the turn's other frames in one socket write.
 *
 * What it serves of the gRPC protocol: unary, server-streaming and bidirectional calls;
 * `grpc-timeout` (given to handlers, which bound their waits by it); compressed requests (gzip and
 * deflate, as grpc-js reads them, bounded by the message limit); trailers-only answers for errors.
 * What it answers by itself: UNIMPLEMENTED for an unknown method, RESOURCE_EXHAUSTED for a message
 * past the limit, INTERNAL for bytes that are not the method's request; HTTP 415 for a request
 * that is not gRPC. Connections come from the broker's listener ({@link GrpcServer.serve}), which
 * admits them and takes TLS off. A connection holds at most `maxConcurrentStreams` requests of
 * at most `maxMessageBytes` each (the reader refuses a longer message before buffering it), and
 * at most 256 MiB of them together.
 */
export class GrpcServer {
  readonly #options: GrpcServerOptions;
  /** Methods by `:path`, with their handlers. */
  readonly #routes = new Map<string, { codec: GrpcMethodCodec; handler: GrpcHandler }>();
  readonly #connections = new Set<Http2ServerConnection>();

  constructor(options: GrpcServerOptions) {
    this.#options = options;
    for (const [name, codec] of Object.entries(options.methods)) {
      const handler = options.handlers[name];
      if (handler !== undefined) this.#routes.set(codec.path, { codec, handler });
    }
  }

  /** Serve an admitted connection (plaintext HTTP/2, TLS already taken off). */
  serve(socket: Duplex): void {
    const connection = new Http2ServerConnection(socket, {
      maxConcurrentStreams: this.#options.maxConcurrentStreams,
      maxHeaderListBytes: MAX_HEADER_LIST_BYTES,
      maxRefusedStreamsInARow: MAX_REFUSED_STREAMS_IN_A_ROW,
      maxHeldBytes: MAX_HELD_REQUEST_BYTES,
      now: this.#options.now,
      onStream: (stream, from) => this.#serve(stream, from),
      onClose: (closed) => this.#connections.delete(closed),
    });
    this.#connections.add(connection);
  }

  /**
   * Stop: every connection is told GOAWAY, so calls in progress may finish; after `graceMs` those
   * left are cut.
   */
  async close(graceMs: number): Promise<void> {
    const connections = [...this.#connections];
    const closed = Promise.all(connections.map((connection) => connection.close()));
    let timer: NodeJS.Timeout | undefined;
    const cut = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        for (const connection of this.#connections) connection.destroy();
        resolve();
      }, graceMs);
    });
    await Promise.race([closed, cut]);
    clearTimeout(timer);
  }

  #serve(stream: Http2ServerStream, connection: Http2ServerConnection): void {
    const contentType = stream.header('content-type');
    if (contentType === undefined || !contentType.startsWith('application/grpc')) {
      // Not a gRPC call at all: an HTTP answer, as gRPC's spec says for a wrong content type.
      answerHttpStatus(stream, 415);
      return;
    }
    const path = stream.header(':path');
    const route = path === undefined ? undefined : this.#routes.get(path);
    if (route === undefined) {
      answerStatus(stream, GRPC_STATUS.UNIMPLEMENTED, `The server does not implement the method ${path}`);
      return;
    }
    const { codec, handler } = route;
    const call = new StreamCall(
      stream,
      connection,
      this.#options.now(),
      codec,
      this.#options.maxMessageBytes,
    );
    const request: RequestOfCall = {
      codec,
      encoding: stream.header('grpc-encoding'),
      maxMessageBytes: this.#options.maxMessageBytes,
    };
    if (handler.kind === 'bidi') this.#serveBidi(stream, call, handler, request);
    else stream.listeners = new OneRequestCall(stream, call, handler, request, this.#options.onHandlerError);
  }

  #serveBidi(
    stream: Http2ServerStream,
    call: StreamCall,
    handler: Extract<GrpcHandler, { kind: 'bidi' }>,
    request: RequestOfCall,
  ): void {
    const onHandlerError = this.#options.onHandlerError;
    let inbound: GrpcInbound<never>;
    try {
      inbound = handler.handle(call, call);
    } catch (error) {
      onHandlerError(error);
      call.fail(GRPC_STATUS.UNKNOWN, 'the call failed');
      return;
    }
    const reader = new MessageReader(request.maxMessageBytes);
    stream.listeners = {
      data: (chunk) => {
        if (call.ended) return;
        try {
          for (const message of reader.push(chunk)) inbound.message(decodeRequest(message, request) as never);
        } catch (error) {
          failCall(call, error, onHandlerError);
        }
        // Outside the call's error path: past the connection's bound, the connection ends.
        stream.holding(reader.bufferedBytes);
      },
      // A client cancelling a call (node's, grpc-js's) half-closes the stream and resets it in one
      // write: the end is a half-close only if no reset follows it in the frames read with it.
      end: () =>
        setImmediate(() => {
          if (!call.ended) inbound.end();
        }),
      close: (end) => call.streamClosed(end),
    };
  }
}

/** What reading a call's request takes: the method's codec, and the request's encoding and bound. */
interface RequestOfCall {
  readonly codec: GrpcMethodCodec;
  /** `grpc-encoding`, for a compressed message. */
  readonly encoding: string | undefined;
  readonly maxMessageBytes: number;
}

/**
 * A unary or server-streaming call, from its stream's side: it carries one request, read whole,
 * then handed to the handler. One object per call is what it costs (RocketMQ's clients make a
 * call per message), instead of a closure per listener.
 */
class OneRequestCall implements StreamListeners {
  readonly #stream: Http2ServerStream;
  readonly #call: StreamCall;
  readonly #handler: Extract<GrpcHandler, { kind: 'unary' | 'serverStream' }>;
  readonly #request: RequestOfCall;
  readonly #onHandlerError: (error: unknown) => void;
  /** Bytes of the request, until it is whole; nearly always one DATA chunk. */
  #reader: MessageReader | undefined;
  #message: FramedMessage | undefined;
  #extra = false;

  constructor(
    stream: Http2ServerStream,
    call: StreamCall,
    handler: Extract<GrpcHandler, { kind: 'unary' | 'serverStream' }>,
    request: RequestOfCall,
    onHandlerError: (error: unknown) => void,
  ) {
    this.#stream = stream;
    this.#call = call;
    this.#handler = handler;
    this.#request = request;
    this.#onHandlerError = onHandlerError;
  }

  data(chunk: Buffer): void {
    const call = this.#call;
    if (call.ended) return;
    this.#reader ??= new MessageReader(this.#request.maxMessageBytes);
    const reader = this.#reader;
    try {
      for (const message of reader.push(chunk)) {
        if (this.#message === undefined) this.#message = message;
        else this.#extra = true;
      }
    } catch (error) {
      failCall(call, error, this.#onHandlerError);
    }
    // Outside the call's error path: past the connection's bound, the connection ends.
    this.#stream.holding(reader.bufferedBytes + (this.#message?.bytes.length ?? 0));
  }

  end(): void {
    // The request is the handler's from here.
    this.#stream.holding(0);
    const call = this.#call;
    if (call.ended) return;
    const message = this.#message;
    const handler = this.#handler;
    if (message === undefined || this.#extra || this.#reader?.midMessage === true) {
      const reason = message === undefined ? 'no request message' : 'more than one request message';
      call.fail(GRPC_STATUS.UNIMPLEMENTED, `a ${handler.kind} call needs exactly one request: ${reason}`);
      return;
    }
    let request: unknown;
    try {
      request = decodeRequest(message, this.#request);
    } catch (error) {
      failCall(call, error, this.#onHandlerError);
      return;
    }
    try {
      if (handler.kind === 'unary') {
        handler.handle(request as never, call).then(
          (response) => call.answer(response),
          (error: unknown) => {
            this.#onHandlerError(error);
            call.fail(GRPC_STATUS.UNKNOWN, 'the call failed');
          },
        );
      } else handler.handle(request as never, call, call);
    } catch (error) {
      this.#onHandlerError(error);
      call.fail(GRPC_STATUS.UNKNOWN, 'the call failed');
    }
  }

  close(end: StreamEnd): void {
    this.#call.streamClosed(end);
  }
}

/** A request message decoded by its method's codec (inflated first, if it came compressed). */
function decodeRequest(message: FramedMessage, request: RequestOfCall): unknown {
  const bytes = message.compressed
    ? inflated(message.bytes, request.encoding, request.maxMessageBytes)
    : message.bytes;
  try {
    return request.codec.requestDeserialize(bytes);
  } catch (error) {
    throw new GrpcFramingError(GRPC_STATUS.INTERNAL, `Error deserializing request: ${String(error)}`);
  }
}

/** End a call whose request could not be read: the framing's status, or INTERNAL for a bug. */
function failCall(call: StreamCall, error: unknown, onHandlerError: (error: unknown) => void): void {
  if (error instanceof GrpcFramingError) call.fail(error.grpcStatus, error.message);
  else {
    onHandlerError(error);
    call.fail(GRPC_STATUS.INTERNAL, 'the request could not be read');
  }
}

/** A compressed request's bytes, inflated within the message limit (a small bomb stays small). */
function inflated(bytes: Buffer, encoding: string | string[] | undefined, maxMessageBytes: number): Buffer {
  try {
    if (encoding === 'gzip') return gunzipSync(bytes, { maxOutputLength: maxMessageBytes });
    if (encoding === 'deflate') return inflateSync(bytes, { maxOutputLength: maxMessageBytes });
  } catch (error) {
    const tooLarge = (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
    throw new GrpcFramingError(
      tooLarge ? GRPC_STATUS.RESOURCE_EXHAUSTED : GRPC_STATUS.INTERNAL,
      tooLarge
        ? 'Received message larger than max once inflated'
        : `Could not inflate the request: ${String(error)}`,
    );
  }
  throw new GrpcFramingError(
    GRPC_STATUS.UNIMPLEMENTED,
    `a compressed message with grpc-encoding ${String(encoding)}, which the server does not read`,
  );
}
