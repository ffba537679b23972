import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { FastifyBaseLogger } from 'fastify';
import type { TlsCredentials } from '../../tls.js';
import type { GrpcServer } from './grpc-server.js';

/** A TLS record's first byte (a handshake): how a TLS client's first bytes differ from HTTP/2's. */
const TLS_HANDSHAKE_RECORD = 0x16;

export interface GrpcListenerOptions {
  /** Where the HTTP/2 connections go, plaintext (TLS taken off here): the gRPC server. */
  readonly server: Pick<GrpcServer, 'serve'>;
  /** With a pair, TLS connections are served on the same port as plaintext ones. */
  readonly tls: TlsCredentials | undefined;
  /** A connection that sends nothing, or does not finish its TLS handshake, this long is cut. */
  readonly firstBytesTimeoutMs: number;
  /**
   * Whether one more connection may open (the broker's `--max-connections`, counted over every
   * transport): a refused one is closed before a byte of it is read.
   */
  readonly admit: (socket: Socket) => boolean;
  readonly log: FastifyBaseLogger;
}

/**
 * The gRPC port: plaintext and TLS on one port, as the RocketMQ proxy serves them (Apache's Node
 * and Python clients default to plaintext, the Java and Go clients to TLS). The first byte tells
 * them apart: a TLS handshake record starts with 0x16, an HTTP/2 client preface with `P`. A TLS
 * connection is decrypted here, by a `tls.Server` that SIGHUP's reload reaches like the other
 * listeners' (advertising `h2` by ALPN, as gRPC requires), and handed to the gRPC server as plaintext.
 */
export class GrpcListener {
  readonly server: NetServer;
  /** The TLS side, when TLS is on: a target of the broker's certificate reload. */
  readonly tlsServer: TlsServer | undefined;

  constructor(options: GrpcListenerOptions) {
    const target = options.server;
    this.tlsServer =
      options.tls === undefined
        ? undefined
        : createTlsServer({
            cert: options.tls.cert,
            key: options.tls.key,
            ALPNProtocols: ['h2'],
            handshakeTimeout: options.firstBytesTimeoutMs,
          });
    this.tlsServer?.on('secureConnection', (socket) => target.serve(socket));
    this.tlsServer?.on('tlsClientError', (error) =>
      options.log.debug({ err: error }, 'grpc tls handshake failed'),
    );
    const tlsServer = this.tlsServer;
    this.server = createServer((socket: Socket) => {
      if (!options.admit(socket)) {
        // No HTTP/2 session exists yet to send a GOAWAY on; the clients reconnect with backoff.
        socket.destroy();
        return;
      }
      socket.setTimeout(options.firstBytesTimeoutMs, () => socket.destroy());
      socket.once('data', (chunk: Buffer) => {
        socket.setTimeout(0);
        socket.pause();
        // Put the bytes back: whichever server takes the socket reads them first.
        socket.unshift(chunk);
        if (chunk[0] === TLS_HANDSHAKE_RECORD) {
          if (tlsServer === undefined) socket.destroy();
          else tlsServer.emit('connection', socket);
        } else {
          target.serve(socket);
        }
      });
      socket.on('error', () => socket.destroy());
    });
  }

  /** Listen on `host:port` (0 picks a free port); resolves with the bound port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /** Stop taking connections; the ones open are the gRPC server's to close. */
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
