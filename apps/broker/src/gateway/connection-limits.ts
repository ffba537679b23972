import type { Socket } from 'node:net';
import { BrokerError, type ClientFrame } from '@ricochet/protocol';
import { Counter, Gauge, type Registry } from 'prom-client';

/** The limits a rejection is counted under in `ricochet_limit_rejections_total{limit}`. */
export const LIMIT_NAMES = [
  'maxConnections',
  'maxFrameBytes',
  'maxInflightRequestsPerConnection',
  'maxWaitingReceivesPerConnection',
  'maxSubscriptionsPerConnection',
  'websocketMessageTimeoutMs',
  'helloTimeoutMs',
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/** The per-connection caps, as configured. */
export interface ConnectionCaps {
  readonly maxConnections: number;
  readonly maxInflightRequestsPerConnection: number;
  readonly maxWaitingReceivesPerConnection: number;
  readonly maxSubscriptionsPerConnection: number;
}

/** What one session has open when a request arrives. */
export interface SessionUsage {
  readonly inflightRequests: number;
  readonly waitingReceives: number;
  readonly subscriptions: number;
}

/**
 * A receive that may wait for messages (a long poll): what `waitingReceives` counts and
 * `maxWaitingReceivesPerConnection` caps, on every front door.
 */
export function waitsForMessages(frame: ClientFrame): boolean {
  return frame.type === 'receive' && frame.awaitDurationMs > 0;
}

/** A request frame, as a session's dispatch sees it. */
type RequestFrame = Exclude<ClientFrame, { type: 'hello' | 'credit' }>;

/**
 * The broker's connection limits (DESIGN.md §7): how many connections may be open (every transport
 * together), and what one connection may have open at once. Over a cap a request is refused with an error from the
 * catalogue and the connection stays usable; every refusal is counted by limit.
 */
export class ConnectionLimits {
  readonly caps: ConnectionCaps;
  readonly #rejections: Counter<'limit'>;
  #openConnections = 0;

  constructor(caps: ConnectionCaps, registry: Registry) {
    this.caps = caps;
    this.#rejections = new Counter({
      name: 'ricochet_limit_rejections_total',
      help: 'Connections, frames and requests refused or closed by a limit, by limit',
      labelNames: ['limit'],
      registers: [registry],
    });
    for (const limit of LIMIT_NAMES) this.#rejections.inc({ limit }, 0);
    const limits = this;
    new Gauge({
      name: 'ricochet_websocket_connections',
      // The name is older than the other transports; dashboards read it, so it stays.
      help: 'Client connections open on every transport (WebSocket, TCP, RocketMQ gRPC), handshake done or not',
      registers: [registry],
      collect() {
        this.set(limits.openConnections);
      },
    });
  }

  /** Client connections (WebSocket, TCP and RocketMQ gRPC) admitted and not yet closed. */
  get openConnections(): number {
    return this.#openConnections;
  }

  /**
   * Admit one more client connection (WebSocket, TCP or RocketMQ gRPC) unless `maxConnections` are open. An admitted connection
   * counts until its TCP socket closes, whether or not the upgrade completes.
   * @returns false when the connection must be refused (with 503).
   */
  admitConnection(socket: Socket): boolean {
    if (this.#openConnections >= this.caps.maxConnections) {
      this.rejected('maxConnections');
      return false;
    }
    this.#openConnections++;
    socket.once('close', () => {
      this.#openConnections--;
    });
    return true;
  }

  /**
   * Check one request against the per-connection caps.
   * @returns the error to answer with, or undefined when the request may run. `530
   *   TOO_MANY_REQUESTS` for in-flight requests and waiting receives (they free up by themselves:
   *   retry after a backoff); `400 BAD_REQUEST` for subscriptions (only an unsubscribe frees one).
   */
  checkRequest(frame: RequestFrame, usage: SessionUsage): BrokerError | undefined {
    const { caps } = this;
    if (usage.inflightRequests >= caps.maxInflightRequestsPerConnection) {
      return this.#refuse(
        'TOO_MANY_REQUESTS',
        'maxInflightRequestsPerConnection',
        caps.maxInflightRequestsPerConnection,
        `more than ${caps.maxInflightRequestsPerConnection} requests in flight on this connection; wait for answers`,
      );
    }
    if (waitsForMessages(frame)) {
      const refusal = this.#checkWaitingReceive(usage.waitingReceives);
      if (refusal) return refusal;
    }
    if (frame.type === 'subscribe' && usage.subscriptions >= caps.maxSubscriptionsPerConnection) {
      return this.#refuse(
        'BAD_REQUEST',
        'maxSubscriptionsPerConnection',
        caps.maxSubscriptionsPerConnection,
        `more than ${caps.maxSubscriptionsPerConnection} subscriptions on this connection; unsubscribe first`,
      );
    }
    return undefined;
  }

  /**
   * Check one more long-polling receive on a connection that has `waitingReceives` waiting. Every
   * front door's (a session's `receive` frame, a RocketMQ `ReceiveMessage`) comes here through the
   * request pipeline's caps stage, so the cap and its metric are the same whatever the wire.
   * @returns `530 TOO_MANY_REQUESTS` past the cap, or undefined when the receive may wait.
   */
  #checkWaitingReceive(waitingReceives: number): BrokerError | undefined {
    const max = this.caps.maxWaitingReceivesPerConnection;
    if (waitingReceives < max) return undefined;
    return this.#refuse(
      'TOO_MANY_REQUESTS',
      'maxWaitingReceivesPerConnection',
      max,
      `more than ${max} long-polling receives waiting on this connection`,
    );
  }

  /** Count a refusal or a close under `limit`. */
  rejected(limit: LimitName): void {
    this.#rejections.inc({ limit });
  }

  #refuse(
    name: 'TOO_MANY_REQUESTS' | 'BAD_REQUEST',
    limit: LimitName,
    max: number,
    message: string,
  ): BrokerError {
    this.rejected(limit);
    return BrokerError.of(name, message, { limit, max });
  }
}
