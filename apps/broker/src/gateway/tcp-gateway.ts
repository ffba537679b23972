import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { ERROR_CODES, encodeFrame } from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { TlsCredentials } from '../tls.js';
import { CLOSE_CODES } from './close-codes.js';
import { listenOn } from './listen-on.js';
import { Session } from './session.js';
import { TcpChannel } from './tcp-channel.js';
import type { GatewayOptions } from './websocket-gateway.js';

/** What the TCP listener needs: the WebSocket gateway's options, a logger, and TLS if it serves `tls://`. */
export interface TcpGatewayOptions extends GatewayOptions {
  readonly log: FastifyBaseLogger;
  /** With a pair the listener serves `tls://`; reload it with `server.setSecureContext`. */
  readonly tls: TlsCredentials | undefined;
  /** How long a TLS handshake may take (the HTTPS server's `httpHeadersTimeoutMs`). */
  readonly tlsHandshakeTimeoutMs: number;
}

/**
 * The broker's TCP listener (`--tcp-port`): each connection is a {@link Session} on a
 * {@link TcpChannel}, the same session the WebSocket endpoint serves, under the same limits:
 * `maxConnections` counts both together. Over it a connection gets a `503` error frame and the
 * close code `1013` instead of the WebSocket endpoint's HTTP `503`.
 */
export class TcpGateway {
  readonly sessions = new Set<Session>();
  /** The listening server; a `tls.Server` (whose certificate SIGHUP swaps) when TLS is on. */
  readonly server: Server;
  readonly #options: TcpGatewayOptions;
  readonly #sockets = new Set<Socket>();

  constructor(options: TcpGatewayOptions) {
    this.#options = options;
    const onConnection = (socket: Socket): void => this.#accept(socket);
    this.server =
      options.tls === undefined
        ? createTcpServer({ noDelay: true }, onConnection)
        : createTlsServer(
            {
              cert: options.tls.cert,
              key: options.tls.key,
              handshakeTimeout: options.tlsHandshakeTimeoutMs,
              noDelay: true,
            },
            onConnection,
          );
    // A client that fails the TLS handshake is the client's problem: one debug line.
    this.server.on('tlsClientError', (error) => options.log.debug({ err: error }, 'tls handshake failed'));
  }

  /** Whether it serves `tls://`. */
  get secure(): boolean {
    return this.#options.tls !== undefined;
  }

  /** Listen on `host:port` (0 picks a free port). @returns the bound port. */
  listen(host: string, port: number): Promise<number> {
    return listenOn(this.server, host, port);
  }

  /** Stop listening and cut every connection still open (its session was closed by the drain). */
  close(): Promise<void> {
    for (const session of this.sessions) session.close();
    for (const socket of this.#sockets) socket.destroy();
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  #accept(socket: Socket): void {
    const options = this.#options;
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
    if (!options.limits.admitConnection(socket)) {
      socket.on('error', () => {});
      const channel = new TcpChannel(socket, this.#channelOptions());
      channel.send(
        encodeFrame({
          type: 'error',
          code: ERROR_CODES.BROKER_UNAVAILABLE.code,
          message: `the broker has ${options.limits.caps.maxConnections} connections open (maxConnections)`,
        }),
      );
      channel.close(CLOSE_CODES.tryAgainLater, 'maxConnections');
      return;
    }
    const session = new Session(new TcpChannel(socket, this.#channelOptions()), {
      engine: options.engine,
      log: options.log,
      access: options.access,
      helloTimeoutMs: options.helloTimeoutMs,
      maxBodyBytes: options.maxBodyBytes,
      maxFrameBytes: options.maxFrameBytes,
      accepting: options.accepting,
      limits: options.limits,
      peers: options.peers,
      queueMap: options.queueMaps?.feed('tcp'),
    });
    this.sessions.add(session);
    socket.once('close', () => this.sessions.delete(session));
  }

  #channelOptions() {
    const { maxFrameBytes, websocketMessageTimeoutMs, limits, log } = this.#options;
    return { maxFrameBytes, frameTimeoutMs: websocketMessageTimeoutMs, limits, log };
  }
}
