import { type ClientHttp2Session, connect, type IncomingHttpHeaders } from 'node:http2';

/** The service every RocketMQ 5 client calls; a method's path is this plus `/<Method>`. */
const SERVICE_PATH = '/apache.rocketmq.v2.MessagingService/';
/** gRPC's message prefix: a compressed flag (always 0 here) and a 4-byte big-endian length. */
const FRAME_HEADER_BYTES = 5;
/**
 * Every call's deadline, as the official clients send one (grpc-js then arms a timer per call).
 * Theirs is 3 s; 1,000 calls queued on a loaded two-core machine can wait longer than that, and a
 * throughput run should not fail on it.
 */
const CALL_DEADLINE = '30S';

/** A message in gRPC's length-prefixed framing, ready to be a request's whole body. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, FRAME_HEADER_BYTES);
  return frame;
}

/** The messages of a gRPC body, unframed. @throws Error on a compressed or cut message. */
export function grpcMessagesOf(body: Buffer): Buffer[] {
  const messages: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    if (body[at] !== 0) throw new Error('a compressed gRPC message (none was asked for)');
    const end = at + FRAME_HEADER_BYTES + body.readUInt32BE(at + 1);
    if (end > body.length) throw new Error('a gRPC message cut short');
    messages.push(body.subarray(at + FRAME_HEADER_BYTES, end));
    at = end;
  }
  return messages;
}

/** How many refused streams a client sends again, over its life, before a refusal fails the call. */
const MAX_REFUSALS = 10_000;

function isRefused(error: unknown): boolean {
  return error instanceof Error && /NGHTTP2_REFUSED_STREAM/.test(error.message);
}

/** A call the server answered with a gRPC status other than OK (grpc-status ≠ 0). */
export class GrpcStatusError extends Error {
  constructor(
    readonly grpcStatus: number,
    message: string,
  ) {
    super(message);
    this.name = 'GrpcStatusError';
  }
}

/**
 * A gRPC client written on `node:http2` alone, as a load generator that costs little per call:
 * no Metadata objects, no (de)serializers, no interceptors. Requests come framed and encoded (the
 * workload encodes them once); calls go round-robin over a few HTTP/2 sessions, each carrying
 * many concurrent streams. It sends what the official clients send: `content-type`, `te:
 * trailers`, a deadline, and the `x-mq-*` headers of Apache's Node client (a request id per call).
 */
export class RawGrpcClient implements AsyncDisposable {
  readonly #sessions: readonly ClientHttp2Session[];
  readonly #headers: Readonly<Record<string, string>>;
  #next = 0;
  #requestId = 0;
  #refusals = 0;

  private constructor(sessions: readonly ClientHttp2Session[], clientId: string) {
    this.#sessions = sessions;
    this.#headers = {
      ':method': 'POST',
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': CALL_DEADLINE,
      'x-mq-protocol': 'v2',
      'x-mq-client-id': clientId,
      'x-mq-language': 'HTTP',
      'x-mq-client-version': '5.0.0',
      'x-mq-namespace': '',
      // Checked only with authentication on, which the bench leaves off; sent for its bytes.
      'x-mq-date-time': new Date().toISOString().replace(/[-:]|\.\d+/g, ''),
    };
  }

  /** `sessions` HTTP/2 connections to `endpoint` (`host:port`), plaintext, as `clientId`. */
  static async connect(endpoint: string, sessions: number, clientId: string): Promise<RawGrpcClient> {
    const opened = await Promise.all(
      Array.from(
        { length: sessions },
        () =>
          new Promise<ClientHttp2Session>((resolve, reject) => {
            const session = connect(`http://${endpoint}`);
            session.once('connect', () => resolve(session));
            session.once('error', reject);
          }),
      ),
    );
    return new RawGrpcClient(opened, clientId);
  }

  /**
   * Call `method` with one framed request; resolves with the response messages (one for a unary
   * call, every frame for a server stream) once the trailers say OK.
   * @throws GrpcStatusError when they do not, or the stream fails.
   */
  call(method: string, frame: Buffer): Promise<Buffer[]> {
    return this.#attempt(method, frame).catch((error: unknown) => {
      // HTTP/2 says a refused stream was never processed, so it is safe to send again; gRPC's
      // clients do so transparently. Counted, so a run that needed it says so.
      if (!isRefused(error) || this.#refusals >= MAX_REFUSALS) throw error;
      this.#refusals++;
      return this.call(method, frame);
    });
  }

  /** Streams the server refused (REFUSED_STREAM) and this client sent again. */
  get refusals(): number {
    return this.#refusals;
  }

  #attempt(method: string, frame: Buffer): Promise<Buffer[]> {
    const session = this.#sessions[this.#next++ % this.#sessions.length];
    if (session === undefined) return Promise.reject(new Error('the client has no session'));
    const stream = session.request({
      ...this.#headers,
      ':path': SERVICE_PATH + method,
      'x-mq-request-id': String(this.#requestId++),
    });
    stream.end(frame);
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let grpcStatus: string | undefined;
      let grpcMessage = '';
      const readStatus = (headers: IncomingHttpHeaders) => {
        const value = headers['grpc-status'];
        if (typeof value === 'string') {
          grpcStatus = value;
          grpcMessage = String(headers['grpc-message'] ?? '');
        }
      };
      // A failed call may answer with headers only (no trailers): its status is in them.
      stream.on('response', readStatus);
      stream.on('trailers', readStatus);
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      stream.on('close', () => {
        if (grpcStatus !== '0') {
          reject(
            new GrpcStatusError(
              Number(grpcStatus ?? -1),
              `${method}: grpc-status ${grpcStatus} ${grpcMessage}`,
            ),
          );
          return;
        }
        try {
          resolve(grpcMessagesOf(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  close(): Promise<void> {
    return Promise.all(
      this.#sessions.map((session) => new Promise<void>((resolve) => session.close(() => resolve()))),
    ).then(() => undefined);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
