import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { deadlineOf, frameMessage, GRPC_STATUS } from './grpc-framing.js';

/**
 * One gRPC call on an HTTP/2 stream, both sides: what a handler reads of it ({@link GrpcCall}) and
 * where its answers go ({@link GrpcWriter}), with gRPC's answer shapes (headers, messages, then
 * trailers with the status; the status alone in the headers when nothing was written).
 */

/** What a method's answers are encoded by. */
export interface ResponseCodec {
  responseSerialize(value: never): Buffer | Uint8Array;
}

/** One call as a handler sees it: its headers, its peer, its deadline, and whether it ended early. */
export interface GrpcCall {
  /** A request header's value (the first, for a repeated one); `undefined` when absent. */
  header(name: string): string | undefined;
  /** The connection it came on, `address:port`: calls of one connection share it. */
  readonly peer: string;
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
const RESPONSE_HEADERS = {
  [constants.HTTP2_HEADER_STATUS]: 200,
  [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
  'grpc-accept-encoding': ACCEPT_ENCODING,
};
const OK_TRAILERS = { 'grpc-status': String(GRPC_STATUS.OK) };

/** A trailers-only answer: the status alone, in the response headers (gRPC's error shape). */
export function answerStatus(stream: ServerHttp2Stream, grpcStatus: number, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ...RESPONSE_HEADERS,
      'grpc-status': String(grpcStatus),
      'grpc-message': encodeURIComponent(message),
    },
    { endStream: true },
  );
}

export class StreamCall implements GrpcCall {
  readonly #stream: ServerHttp2Stream;
  readonly #headers: IncomingHttpHeaders;
  readonly deadlineMs: number;
  #cancelled = false;
  #listeners: (() => void)[] | undefined;
  /** Set once the answer ended: a close after it is not a cancellation. */
  finished = false;

  constructor(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, now: number) {
    this.#stream = stream;
    this.#headers = headers;
    const timeout = headers['grpc-timeout'];
    this.deadlineMs = deadlineOf(typeof timeout === 'string' ? timeout : undefined, now);
    stream.once('close', () => {
      // Closed before the answer ended, or reset by the client even after (a cancel).
      if (this.finished && stream.rstCode === constants.NGHTTP2_NO_ERROR) return;
      this.#cancelled = true;
      const listeners = this.#listeners;
      this.#listeners = undefined;
      for (const listener of listeners ?? []) listener();
    });
  }

  header(name: string): string | undefined {
    const value = this.#headers[name];
    return Array.isArray(value) ? value[0] : value;
  }

  get peer(): string {
    const { remoteAddress, remotePort } = this.#stream.session?.socket ?? {};
    return `${remoteAddress}:${remotePort}`;
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
}

/** Writes a call's answers: headers before the first, trailers with the status after the last. */
export class StreamWriter implements GrpcWriter<never> {
  readonly #stream: ServerHttp2Stream;
  readonly #call: StreamCall;
  readonly #codec: ResponseCodec;
  readonly #maxMessageBytes: number;
  #ended = false;

  constructor(stream: ServerHttp2Stream, call: StreamCall, codec: ResponseCodec, maxMessageBytes: number) {
    this.#stream = stream;
    this.#call = call;
    this.#codec = codec;
    this.#maxMessageBytes = maxMessageBytes;
  }

  get ended(): boolean {
    return this.#ended || this.#call.cancelled;
  }

  write(response: never): void {
    if (this.ended) return;
    const bytes = this.#codec.responseSerialize(response);
    if (bytes.length > this.#maxMessageBytes) {
      this.fail(
        GRPC_STATUS.RESOURCE_EXHAUSTED,
        `Sent message larger than max (${bytes.length} vs. ${this.#maxMessageBytes})`,
      );
      return;
    }
    const stream = this.#stream;
    if (!stream.headersSent) stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    stream.write(frameMessage(bytes));
  }

  /** A unary call's one answer and its OK. */
  answer(response: object): void {
    this.write(response as never);
    this.end();
  }

  end(): void {
    if (this.ended) return;
    this.#ended = true;
    this.#call.finished = true;
    const stream = this.#stream;
    if (!stream.headersSent) {
      // Nothing was written: the status goes in the headers (trailers-only).
      stream.respond({ ...RESPONSE_HEADERS, ...OK_TRAILERS }, { endStream: true });
      return;
    }
    stream.once('wantTrailers', () => stream.sendTrailers(OK_TRAILERS));
    stream.end();
  }

  /** End the call with a status other than OK. */
  fail(grpcStatus: number, message: string): void {
    if (this.ended) return;
    this.#ended = true;
    this.#call.finished = true;
    const stream = this.#stream;
    if (!stream.headersSent) {
      answerStatus(stream, grpcStatus, message);
      return;
    }
    stream.once('wantTrailers', () =>
      stream.sendTrailers({ 'grpc-status': String(grpcStatus), 'grpc-message': encodeURIComponent(message) }),
    );
    stream.end();
  }
}
