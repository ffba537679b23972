import type { Clock } from '@ricochet/core';
import type { FastifyBaseLogger } from 'fastify';
import type { AccessControl } from '../../auth/access-control.js';
import type { BrokerConfig } from '../../config.js';
import type { BrokerService } from '../../engine/index.js';
import type { TlsCredentials } from '../../tls.js';
import type { ConnectionLimits } from '../connection-limits.js';
import { GrpcListener } from './grpc-listener.js';
import { GrpcServer } from './grpc-server.js';
import { rocketServiceDefinition } from './rocketmq-codecs.js';
import { RocketMessagingService } from './rocketmq-service.js';

/** Room for a message's other fields beside a body at the broker's limit. */
const ENVELOPE_BYTES = 1024 * 1024;
/** How long calls in progress get to finish when the broker closes, before their connections are cut. */
const SHUTDOWN_GRACE_MS = 1_000;

export interface GrpcGatewayOptions {
  readonly engine: BrokerService;
  readonly log: FastifyBaseLogger;
  /** Who may do what (DESIGN §7): the same principals as on every other transport. */
  readonly access: AccessControl;
  readonly clock: Clock;
  readonly maxBodyBytes: number;
  readonly autoCreateTopics: boolean;
  readonly accepting: () => boolean;
  /** The longest long poll a receive is held for, and what consumers are told to ask for. */
  readonly longPollingTimeoutMs: number;
  /** The broker's TLS pair: with it, the port serves TLS besides plaintext. */
  readonly tls: TlsCredentials | undefined;
  /** A connection silent this long, or this long in its TLS handshake, is cut. */
  readonly firstBytesTimeoutMs: number;
  /**
   * The broker's connection limits, the same instance every transport admits through: a gRPC
   * connection counts against `--max-connections` with the others, its long polls against
   * `--max-waiting-receives-per-connection`, and every refusal shows in the same metric.
   */
  readonly limits: ConnectionLimits;
}

/**
 * The RocketMQ 5 front door (`--grpc-port`): a gRPC server of the broker's own on HTTP/2 framed by
 * the broker ({@link GrpcServer}; grpc-js and then `node:http2` cost several times the work per
 * call, issue 44), serving `apache.rocketmq.v2.MessagingService` through
 * {@link RocketMessagingService}, on a port that takes plaintext and TLS alike ({@link GrpcListener}).
 */
export class GrpcGateway {
  readonly #server: GrpcServer;
  readonly #service: RocketMessagingService;
  readonly #listener: GrpcListener;
  readonly #requestedPort: number;

  constructor(port: number, options: GrpcGatewayOptions) {
    this.#requestedPort = port;
    this.#service = new RocketMessagingService(options);
    this.#server = new GrpcServer({
      methods: rocketServiceDefinition(),
      handlers: this.#service.handlers(),
      // A body at the broker's limit must fit, with the message's other fields.
      maxMessageBytes: options.maxBodyBytes + ENVELOPE_BYTES,
      // A client past it waits for a stream to free up: HTTP/2's own flow control, not an error.
      maxConcurrentStreams: options.limits.caps.maxInflightRequestsPerConnection,
      onHandlerError: (error) => options.log.error({ err: error }, 'a RocketMQ call failed'),
      now: () => options.clock.now(),
    });
    this.#listener = new GrpcListener({
      server: this.#server,
      tls: options.tls,
      firstBytesTimeoutMs: options.firstBytesTimeoutMs,
      admit: (socket) => options.limits.admitConnection(socket),
      log: options.log,
    });
  }

  /** The gateway `config` asks for (`grpcPort`), or `undefined` when it asks for none. */
  static ofConfig(
    config: BrokerConfig,
    options: Pick<GrpcGatewayOptions, 'engine' | 'log' | 'access' | 'accepting' | 'clock' | 'tls' | 'limits'>,
  ): GrpcGateway | undefined {
    if (config.grpcPort === undefined) return undefined;
    return new GrpcGateway(config.grpcPort, {
      ...options,
      maxBodyBytes: config.maxBodyBytes,
      autoCreateTopics: config.autoCreateTopics,
      longPollingTimeoutMs: config.grpcLongPollingTimeoutMs,
      firstBytesTimeoutMs: config.httpHeadersTimeoutMs,
    });
  }

  /** The TLS side of the port, for the broker's certificate reload; `undefined` without TLS. */
  get tlsServer(): GrpcListener['tlsServer'] {
    return this.#listener.tlsServer;
  }

  /**
   * Listen on `host` at the configured port (0 picks a free one); `urlHost` is how the start line
   * writes the host (bracketed for IPv6).
   */
  async listen(host: string, urlHost: string): Promise<{ grpcPort: number; grpcUrl: string }> {
    const grpcPort = await this.#listener.listen(host, this.#requestedPort);
    return { grpcPort, grpcUrl: `grpc://${urlHost}:${grpcPort}` };
  }

  /**
   * Stop: waiting receives answer at once, push deliveries are released (C2), calls in progress
   * get {@link SHUTDOWN_GRACE_MS}, then every connection is cut.
   */
  async close(): Promise<void> {
    this.#service.close();
    await this.#listener.close().catch(() => undefined);
    await this.#server.close(SHUTDOWN_GRACE_MS);
  }
}
