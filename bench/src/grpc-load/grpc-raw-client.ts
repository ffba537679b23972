import { connect, type Socket } from 'node:net';
import { type Call, RawConnection } from './raw-connection.js';

export { grpcFrame, grpcMessagesOf } from './grpc-messages.js';

/** How many refused streams a client sends again, over its life, before a refusal fails the call. */
const MAX_REFUSALS = 10_000;

/**
 * A gRPC load generator's client: calls go round-robin over a few HTTP/2 connections
 * ({@link RawConnection}), each carrying many concurrent streams, with requests framed and encoded
 * by the workload once. It sends what the official clients send: `content-type`, `te: trailers`,
 * a deadline, and the `x-mq-*` headers of Apache's Node client (a request id per call).
 */
export class RawGrpcClient implements AsyncDisposable {
  readonly #connections: readonly RawConnection[];
  #next = 0;
  #refusals = 0;

  private constructor(connections: (client: RawGrpcClient) => readonly RawConnection[]) {
    this.#connections = connections(this);
  }

  /** `connections` HTTP/2 connections to `endpoint` (`host:port`), plaintext, as `clientId`. */
  static async connect(endpoint: string, connections: number, clientId: string): Promise<RawGrpcClient> {
    const separator = endpoint.lastIndexOf(':');
    const host = endpoint.slice(0, separator);
    const port = Number(endpoint.slice(separator + 1));
    const sockets = await Promise.all(
      Array.from(
        { length: connections },
        () =>
          new Promise<Socket>((resolve, reject) => {
            const socket = connect({ host, port }, () => {
              socket.off('error', reject);
              resolve(socket);
            });
            socket.once('error', reject);
          }),
      ),
    );
    return new RawGrpcClient((client) =>
      sockets.map((socket) => new RawConnection(socket, endpoint, clientId, (call) => client.#refused(call))),
    );
  }

  /**
   * Call `method` with one framed request; resolves with the response messages (one for a unary
   * call, every one of a server stream).
   * @throws Error when the call is answered without a message, reset, or its connection fails.
   */
  call(method: string, body: Buffer): Promise<Buffer[]> {
    return new Promise((resolve, reject) => this.#send({ method, body, resolve, reject }));
  }

  /** Streams the server refused (REFUSED_STREAM) and this client sent again. */
  get refusals(): number {
    return this.#refusals;
  }

  #send(call: Call): void {
    const connection = this.#connections[this.#next++ % this.#connections.length];
    if (connection === undefined) call.reject(new Error('the client has no connection'));
    else connection.call(call);
  }

  /** HTTP/2 says a refused stream was never processed, so it is safe to send again; counted. */
  #refused(call: Call): void {
    if (this.#refusals >= MAX_REFUSALS) {
      call.reject(new Error(`${call.method}: refused by the server ${MAX_REFUSALS} times`));
      return;
    }
    this.#refusals++;
    this.#send(call);
  }

  async close(): Promise<void> {
    await Promise.all(this.#connections.map((connection) => connection.close()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
