import { deadlineOf, frameMessage, GRPC_STATUS, MESSAGE_PREFIX_BYTES } from './grpc-framing.js';
import { encodeHeaderBlock } from './http2/hpack.js';
import type { Http2ServerStream, StreamEnd } from './http2/http2-stream.js';

/**
 * One gRPC call on an HTTP/2 stream, both sides: what a handler reads of it ({@link GrpcCall}) and
 * where its answers go ({@link GrpcWriter}), with gRPC's answer shapes (headers, messages, then
 * trailers with the status; the status alone in the headers when nothing was written).
 */

/** What a method's answers are encoded by. */
export interface ResponseCodec {
  responseSerialize(value: never): Buffer | Uint8Array;
  /**
   * The answer as a whole gRPC message (its 5-byte prefix, then the bytes), when the codec can
   * write it so: the hot answers skip a copy behind the prefix.
   */
  responseFrame?(value: never): Buffer;
}

/** One call as a handler sees it: its headers, its connection, its deadline, and whether it ended early. */
export interface GrpcCall {
  /** A request header's value (the first, for a repeated one); `undefined` when absent. */
  header(name: string): string | undefined;
  /**
   * The connection it came on, as an object: the same for every call of the connection, so it
   * keys per-connection state (a `WeakMap` forgets it with the connection).
   */
  readonly connection: object;
  /** When the client stops waiting (its `grpc-timeout`), as epoch ms; `Infinity` without one. */
  readonly deadlineMs: number;
  /** The client went (reset the stream, or its connection closed) before the answer ended. */
  readonly cancelled: boolean;
  /** Run `listener` once, if the call is cancelled. */
  onCancelled(listener: () => void): void;
}

/** Where a streaming handler writes its answers; `end` sends status OK. */
export interface GrpcWriter<Response> {
  write(response: Response): void;
  end(): void;
}

/** A client stream's messages, for a bidirectional handler. */
export interface GrpcInbound<Request> {
  message(request: Request): void;
  /** The client half-closed: it sends no more. */
  end(): void;
}

/** Sent with every answer, as grpc-js sends it: the request encodings the server reads. */
const ACCEPT_ENCODING = 'identity,deflate,gzip';
const RESPONSE_FIELDS: readonly (readonly [string, string])[] = [
  [':status', '200'],
  ['content-type', 'application/grpc'],
  ['grpc-accept-encoding', ACCEPT_ENCODING],
];
/** The header blocks every call's answer is made of, encoded once. */
const RESPONSE_HEADERS = encodeHeaderBlock(RESPONSE_FIELDS);
const OK_TRAILERS = encodeHeaderBlock([['grpc-status', String(GRPC_STATUS.OK)]]);
const OK_TRAILERS_ONLY = encodeHeaderBlock([...RESPONSE_FIELDS, ['grpc-status', String(GRPC_STATUS.OK)]]);

function statusFields(grpcStatus: number, message: string): [string, string][] {
  return [
    ['grpc-status', String(grpcStatus)],
    ['grpc-message', encodeURIComponent(message)],
  ];
}

/** A trailers-only answer: the status alone, in the response headers (gRPC's error shape). */
export function answerStatus(stream: Http2ServerStream, grpcStatus: number, message: string): void {
  if (stream.closed || stream.headersSent) return;
  stream.respond(encodeHeaderBlock([...RESPONSE_FIELDS, ...statusFields(grpcStatus, message)]), true);
}

/** An answer that is not gRPC's at all: an HTTP status alone (a request that is not a gRPC call). */
export function answerHttpStatus(stream: Http2ServerStream, httpStatus: number): void {
  if (stream.closed || stream.headersSent) return;
  stream.respond(encodeHeaderBlock([[':status', String(httpStatus)]]), true);
}

/**
 * One call on its stream, both sides in one object (one of these is made per call, and RocketMQ's
 * clients make a call per message): what a handler reads of it, as a {@link GrpcCall}, and where
 * its answers go, as a {@link GrpcWriter} (headers before the first answer, trailers with the
 * status after the last).
 */
export class StreamCall implements GrpcCall, GrpcWriter<never> {
  readonly #stream: Http2ServerStream;
  readonly #codec: ResponseCodec;
  readonly #maxMessageBytes: number;
  readonly connection: object;
  readonly deadlineMs: number;
  #cancelled = false;
  #listeners: (() => void)[] | undefined;
  /** Set once the answer ended: a close after it is not a cancellation. */
  #finished = false;

  constructor(
    stream: Http2ServerStream,
    connection: object,
    now: number,
    codec: ResponseCodec,
    maxMessageBytes: number,
  ) {
    this.#stream = stream;
    this.connection = connection;
    this.deadlineMs = deadlineOf(stream.header('grpc-timeout'), now);
    this.#codec = codec;
    this.#maxMessageBytes = maxMessageBytes;
  }

  header(name: string): string | undefined {
    return this.#stream.header(name);
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  onCancelled(listener: () => void): void {
    if (this.#cancelled) {
      listener();
      return;
    }
    this.#listeners ??= [];
    this.#listeners.push(listener);
  }

  /** The stream closed: unless the answer ended and the stream with it, the call was cancelled. */
  streamClosed(end: StreamEnd): void {
    if (this.#finished && end.kind === 'finished') return;
    this.#cancelled = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }

  /** The answer ended, or the client went: nothing more is written. */
  get ended(): boolean {
    return this.#finished || this.#cancelled;
  }

  write(response: never): void {
    if (this.ended) return;
    const codec = this.#codec;
    const frame =
      codec.responseFrame === undefined
        ? frameMessage(codec.responseSerialize(response))
        : codec.responseFrame(response);
    const messageBytes = frame.length - MESSAGE_PREFIX_BYTES;
    if (messageBytes > this.#maxMessageBytes) {
      this.fail(
        GRPC_STATUS.RESOURCE_EXHAUSTED,
        `Sent message larger than max (${messageBytes} vs. ${this.#maxMessageBytes})`,
      );
      return;
    }
    const stream = this.#stream;
    if (!stream.headersSent) stream.respond(RESPONSE_HEADERS, false);
    stream.write(frame);
  }

  /** A unary call's one answer and its OK. */
  answer(response: object): void {
    this.write(response as never);
    this.end();
  }

  end(): void {
    if (this.ended) return;
    this.#finished = true;
    const stream = this.#stream;
    // Nothing written: the status goes in the headers (trailers-only).
    if (!stream.headersSent) stream.respond(OK_TRAILERS_ONLY, true);
    else stream.end(OK_TRAILERS);
  }

  /** End the call with a status other than OK. */
  fail(grpcStatus: number, message: string): void {
    if (this.ended) return;
    this.#finished = true;
    const stream = this.#stream;
    if (!stream.headersSent) answerStatus(stream, grpcStatus, message);
    else stream.end(encodeHeaderBlock(statusFields(grpcStatus, message)));
  }
}
