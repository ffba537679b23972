import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { Clock } from '@ricochet/core';
import type { FastifyBaseLogger } from 'fastify';
import type { AccessControl } from '../../auth/access-control.js';
import type { BrokerConfig } from '../../config.js';
import type { BrokerService } from '../../engine/broker-service.js';
import { messagingServiceDefinition } from './rocketmq-schema.js';
import { RocketMessagingService } from './rocketmq-service.js';

/** Room for a message's other fields beside a body at the broker's limit. */
const ENVELOPE_BYTES = 1024 * 1024;

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
}

/**
 * The RocketMQ 5 front door (`--grpc-port`): a grpc-js server, the stack Apache's Node client runs
 * too, serving `apache.rocketmq.v2.MessagingService` through {@link RocketMessagingService}.
 */
export class GrpcGateway {
  readonly #server: Server;
  readonly #service: RocketMessagingService;
  readonly #requestedPort: number;
  #port: number | undefined;

  constructor(port: number, options: GrpcGatewayOptions) {
    this.#requestedPort = port;
    this.#server = new Server({
      // grpc-js reads at most 4 MiB per message by default: a body at the broker's limit must fit.
      'grpc.max_receive_message_length': options.maxBodyBytes + ENVELOPE_BYTES,
      'grpc.max_send_message_length': options.maxBodyBytes + ENVELOPE_BYTES,
    });
    this.#service = new RocketMessagingService({
      engine: options.engine,
      log: options.log,
      access: options.access,
      clock: options.clock,
      maxBodyBytes: options.maxBodyBytes,
      longPollingTimeoutMs: options.longPollingTimeoutMs,
      accepting: options.accepting,
      autoCreateTopics: options.autoCreateTopics,
    });
    this.#server.addService(messagingServiceDefinition(), this.#service.handlers());
  }

  /**
   * The gateway `config` asks for (`grpcPort`), or `undefined` when it asks for none.
   */
  static ofConfig(
    config: Pick<BrokerConfig, 'grpcPort' | 'maxBodyBytes' | 'autoCreateTopics' | 'grpcLongPollingTimeoutMs'>,
    options: Pick<GrpcGatewayOptions, 'engine' | 'log' | 'access' | 'accepting' | 'clock'>,
  ): GrpcGateway | undefined {
    if (config.grpcPort === undefined) return undefined;
    return new GrpcGateway(config.grpcPort, {
      ...options,
      maxBodyBytes: config.maxBodyBytes,
      autoCreateTopics: config.autoCreateTopics,
      longPollingTimeoutMs: config.grpcLongPollingTimeoutMs,
    });
  }

  /**
   * Listen on `host` at the configured port (0 picks a free one); `urlHost` is how the start line
   * writes the host (bracketed for IPv6).
   */
  listen(host: string, urlHost: string): Promise<{ grpcPort: number; grpcUrl: string }> {
    const address = host.includes(':')
      ? `[${host}]:${this.#requestedPort}`
      : `${host}:${this.#requestedPort}`;
    return new Promise((resolve, reject) => {
      this.#server.bindAsync(address, ServerCredentials.createInsecure(), (error, bound) => {
        if (error) reject(error);
        else {
          this.#port = bound;
          resolve({ grpcPort: bound, grpcUrl: `grpc://${urlHost}:${bound}` });
        }
      });
    });
  }

  /** The bound port, once listening. */
  get port(): number | undefined {
    return this.#port;
  }

  /**
   * Stop: waiting receives answer, push leases are released (C2), calls in progress get until
   * the graceful shutdown ends, then every connection is cut.
   */
  close(): Promise<void> {
    this.#service.close();
    return new Promise((resolve) => {
      const forced = setTimeout(() => {
        this.#server.forceShutdown();
        resolve();
      }, 1_000);
      forced.unref();
      this.#server.tryShutdown(() => {
        clearTimeout(forced);
        resolve();
      });
    });
  }
}
