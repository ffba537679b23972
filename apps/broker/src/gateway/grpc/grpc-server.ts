import {
  constants,
  createServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Duplex } from 'node:stream';
import { gunzipSync, inflateSync } from 'node:zlib';
import { type FramedMessage, GRPC_STATUS, GrpcFramingError, MessageReader } from './grpc-framing.js';
import {
  answerStatus,
  type GrpcCall,
  type GrpcInbound,
  type GrpcWriter,
  StreamCall,
  StreamWriter,
} from './grpc-stream-call.js';

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

/** Streams refused in a row after which a connection is taken for a flood and ended. */
const MAX_REFUSED_STREAMS_IN_A_ROW = 10_000;
/** What one connection's streams may hold in the broker, queued answers included, in MB. */
const SESSION_MEMORY_MB = 1_024;

/**
 * A gRPC server written on `node:http2` alone (issue 44 item 2). grpc-js served the RocketMQ front
 * door at about 12× the broker CPU per message of the own protocol; profiled, most of it was its
 * per-call machinery (Metadata objects, call and stream wrappers, interceptors, per-call timers,
 * status objects), none of which this broker uses. Here a call costs what HTTP/2 costs: the stream,
 * its headers, one DATA write and the trailers. Requests and answers are (de)serialized by the
 * codecs given, the broker's own for the hot RPCs.
 *
 * What it serves of the gRPC protocol: unary, server-streaming and bidirectional calls;
 * `grpc-timeout` (given to handlers, which bound their waits by it); compressed requests (gzip and
 * deflate, as grpc-js reads them, bounded by the message limit); trailers-only answers for errors.
 * What it answers by itself: UNIMPLEMENTED for an unknown method, RESOURCE_EXHAUSTED for a message
 * past the limit, INTERNAL for bytes that are not the method's request. Connections come from the
 * broker's listener ({@link GrpcServer.serve}), which admits them and takes TLS off.
 */
export class GrpcServer {
  readonly #options: GrpcServerOptions;
  readonly #http2: Http2Server;
  /** Methods by `:path`, with their handlers. */
  readonly #routes = new Map<string, { codec: GrpcMethodCodec; handler: GrpcHandler }>();
  readonly #sessions = new Set<Http2Session>();

  constructor(options: GrpcServerOptions) {
    this.#options = options;
    for (const [name, codec] of Object.entries(options.methods)) {
      const handler = options.handlers[name];
      if (handler !== undefined) this.#routes.set(codec.path, { codec, handler });
    }
    this.#http2 = createServer({
      settings: { maxConcurrentStreams: options.maxConcurrentStreams },
      // In MB. Node's default of 10 counts queued answers too, so a few receives of large messages
      // would make it refuse every new stream; past this bound it still does (REFUSED_STREAM, which
      // gRPC clients retry), so a client that stops reading cannot make the broker hold more.
      maxSessionMemory: SESSION_MEMORY_MB,
      // Node ends a whole connection (GOAWAY INTERNAL_ERROR) after 100 streams refused in a row,
      // every call on it failed. Under a loaded loop it refused streams of well-behaved clients
      // below every limit set here (seen with grpc-js too), and gRPC clients send a refused stream
      // again by themselves: a refusal stays the stream's, and only a flood ends the connection.
      maxSessionRejectedStreams: MAX_REFUSED_STREAMS_IN_A_ROW,
    });
    this.#http2.on('session', (session: Http2Session) => {
      this.#sessions.add(session);
      session.once('close', () => this.#sessions.delete(session));
      // A broken connection ends its session; its streams see `close` and are cancelled.
      session.on('error', () => session.destroy());
    });
    this.#http2.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) =>
      this.#serve(stream, headers),
    );
  }

  /** Serve an admitted connection (plaintext HTTP/2, TLS already taken off). */
  serve(socket: Duplex): void {
    this.#http2.emit('connection', socket);
  }

  /**
   * Stop: every session is told GOAWAY, so calls in progress may finish; after `graceMs` those left
   * are cut.
   */
  async close(graceMs: number): Promise<void> {
    const sessions = [...this.#sessions];
    for (const session of sessions) session.close();
    const closed = Promise.all(
      sessions.map((session) =>
        session.closed ? undefined : new Promise<void>((resolve) => session.once('close', () => resolve())),
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    const cut = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        for (const session of this.#sessions) session.destroy();
        resolve();
      }, graceMs);
    });
    await Promise.race([closed, cut]);
    clearTimeout(timer);
  }

  #serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => undefined);
    const contentType = headers[constants.HTTP2_HEADER_CONTENT_TYPE];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      // Not a gRPC call at all: an HTTP answer, as gRPC's spec says for a wrong content type.
      stream.respond({ [constants.HTTP2_HEADER_STATUS]: 415 }, { endStream: true });
      return;
    }
    const path = headers[constants.HTTP2_HEADER_PATH];
    const route = typeof path === 'string' ? this.#routes.get(path) : undefined;
    if (route === undefined) {
      answerStatus(stream, GRPC_STATUS.UNIMPLEMENTED, `The server does not implement the method ${path}`);
      return;
    }
    const call = new StreamCall(stream, headers, this.#options.now());
    const reader = new MessageReader(this.#options.maxMessageBytes);
    const encoding = headers['grpc-encoding'];
    const decode = (message: FramedMessage): unknown => {
      const bytes = message.compressed
        ? inflated(message.bytes, encoding, this.#options.maxMessageBytes)
        : message.bytes;
      try {
        return route.codec.requestDeserialize(bytes);
      } catch (error) {
        throw new GrpcFramingError(GRPC_STATUS.INTERNAL, `Error deserializing request: ${String(error)}`);
      }
    };
    const writer = new StreamWriter(stream, call, route.codec, this.#options.maxMessageBytes);
    const { handler } = route;
    if (handler.kind === 'bidi') {
      let inbound: GrpcInbound<never> | undefined;
      try {
        inbound = handler.handle(call, writer);
      } catch (error) {
        this.#options.onHandlerError(error);
        writer.fail(GRPC_STATUS.UNKNOWN, 'the call failed');
        return;
      }
      const served = inbound;
      stream.on('data', (chunk: Buffer) => {
        if (writer.ended) return;
        try {
          for (const message of reader.push(chunk)) served.message(decode(message) as never);
        } catch (error) {
          this.#failed(writer, error);
        }
      });
      stream.once('end', () => {
        // A stream the client resets ends its readable side too, before its close says why: the
        // end is a half-close only if no reset follows it.
        setImmediate(() => {
          if (!writer.ended) served.end();
        });
      });
      return;
    }
    // Unary and server-streaming calls carry one request: read it whole, then answer.
    let request: FramedMessage | undefined;
    let extra = false;
    stream.on('data', (chunk: Buffer) => {
      if (writer.ended) return;
      try {
        for (const message of reader.push(chunk)) {
          if (request === undefined) request = message;
          else extra = true;
        }
      } catch (error) {
        this.#failed(writer, error);
      }
    });
    stream.once('end', () => {
      if (writer.ended) return;
      if (request === undefined || extra || reader.midMessage) {
        const reason = request === undefined ? 'no request message' : 'more than one request message';
        writer.fail(GRPC_STATUS.UNIMPLEMENTED, `a ${handler.kind} call needs exactly one request: ${reason}`);
        return;
      }
      let decoded: unknown;
      try {
        decoded = decode(request);
      } catch (error) {
        this.#failed(writer, error);
        return;
      }
      this.#dispatch(handler, decoded, call, writer);
    });
  }

  #dispatch(handler: GrpcHandler, request: unknown, call: StreamCall, writer: StreamWriter): void {
    try {
      if (handler.kind === 'unary') {
        handler.handle(request as never, call).then(
          (response) => writer.answer(response),
          (error: unknown) => {
            this.#options.onHandlerError(error);
            writer.fail(GRPC_STATUS.UNKNOWN, 'the call failed');
          },
        );
      } else if (handler.kind === 'serverStream') {
        handler.handle(request as never, call, writer);
      }
    } catch (error) {
      this.#options.onHandlerError(error);
      writer.fail(GRPC_STATUS.UNKNOWN, 'the call failed');
    }
  }

  #failed(writer: StreamWriter, error: unknown): void {
    if (error instanceof GrpcFramingError) writer.fail(error.grpcStatus, error.message);
    else {
      this.#options.onHandlerError(error);
      writer.fail(GRPC_STATUS.INTERNAL, 'the request could not be read');
    }
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
