import type {
  handleBidiStreamingCall,
  handleServerStreamingCall,
  handleUnaryCall,
  Metadata,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { BrokerError } from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { AccessControl } from '../../auth/access-control.js';
import type { ConnectionLimits } from '../connection-limits.js';
import { authenticateCall, type RocketCall, type RocketDeps } from './rocketmq-call.js';
import { RocketConsumption } from './rocketmq-consumption.js';
import { rocketMessageOf } from './rocketmq-messages.js';
import { queryAssignment, queryRoute } from './rocketmq-routes.js';
import {
  type AckMessageRequest,
  type ChangeInvisibleDurationRequest,
  durationOf,
  type ForwardMessageToDeadLetterQueueRequest,
  millisOf,
  type QueryAssignmentRequest,
  type QueryRouteRequest,
  type ReceiveMessageRequest,
  type ReceiveMessageResponse,
  type RocketStatus,
  type SendMessageRequest,
  type TelemetryCommand,
} from './rocketmq-schema.js';
import { sendMessages } from './rocketmq-send.js';
import { OK_STATUS, rocketStatusOf, status } from './rocketmq-status.js';
import { serveTelemetry } from './rocketmq-telemetry.js';

export interface RocketServiceOptions extends RocketDeps {
  readonly log: FastifyBaseLogger;
  /** Who may do what (DESIGN §7); disabled when the broker runs without authentication. */
  readonly access: AccessControl;
  /** Whether the broker still takes new work (false while draining). */
  readonly accepting: () => boolean;
  /** The broker's per-connection caps: one more waiting receive past its cap is TOO_MANY_REQUESTS (as 530). */
  readonly limits: Pick<ConnectionLimits, 'checkWaitingReceive'>;
}

/**
 * `apache.rocketmq.v2.MessagingService` onto the broker's service: each RPC is a call of the same
 * `BrokerService` Ricochet's own sessions call, authenticated and permitted as theirs are, so
 * every rule of DESIGN §3 holds as it does for them (and, with queues spread, requests reach the
 * queue's owner the same way). Nothing here decides a message's fate: it translates.
 *
 * One error path: a handler throws, and the call's wrapper answers with the status of the error
 * (a catalogue `BrokerError` keeps its meaning; anything else is INTERNAL_ERROR and logged).
 * Every reply carries a status: the clients treat a missing one as OK but `CODE_UNSPECIFIED` as a
 * failure, and grpc-js answers a handler that never calls back with nothing at all.
 */
export class RocketMessagingService {
  readonly #options: RocketServiceOptions;
  readonly #consumption: RocketConsumption;
  /** Receives in progress, answered at once when the broker closes. */
  readonly #receives = new Set<AbortController>();
  /** Long-polling receives waiting, by connection (the peer's address and port). */
  readonly #waitingByConnection = new Map<string, number>();

  constructor(options: RocketServiceOptions) {
    this.#options = options;
    this.#consumption = new RocketConsumption(options);
  }

  /** The handlers grpc-js serves, by method name. */
  handlers(): UntypedServiceImplementation {
    const deps: RocketDeps = this.#options;
    const consumption = this.#consumption;
    const unsupported = (reason: string) => this.#unsupported(reason);
    const implementation: Record<string, unknown> = {
      QueryRoute: this.#unary((request: QueryRouteRequest, call) => queryRoute(deps, request, call)),
      QueryAssignment: this.#unary((request: QueryAssignmentRequest, call) =>
        queryAssignment(deps, request, call),
      ),
      Heartbeat: this.#unary(() => Promise.resolve({ status: OK_STATUS })),
      SendMessage: this.#unary((request: SendMessageRequest, call) => sendMessages(deps, request, call)),
      ReceiveMessage: this.#receiveMessage,
      AckMessage: this.#unary((request: AckMessageRequest, call) => consumption.ack(request, call)),
      ChangeInvisibleDuration: this.#unary((request: ChangeInvisibleDurationRequest, call) =>
        consumption.changeInvisibleDuration(request, call),
      ),
      ForwardMessageToDeadLetterQueue: this.#unary((request: ForwardMessageToDeadLetterQueueRequest, call) =>
        consumption.forwardToDeadLetterQueue(request, call),
      ),
      Telemetry: this.#telemetry,
      NotifyClientTermination: this.#unary((_request: object, call) => {
        // The Node client's shutdown() rejects on anything but OK here.
        if (call.clientId !== undefined) consumption.clients.terminated(call.clientId);
        return Promise.resolve({ status: OK_STATUS });
      }),
      PullMessage: this.#unsupportedStream(
        'PullMessage: Ricochet serves receive with leases, not offset pulls',
      ),
      UpdateOffset: unsupported('UpdateOffset: Ricochet keeps consumer offsets itself'),
      GetOffset: unsupported('GetOffset: Ricochet keeps consumer offsets itself'),
      QueryOffset: unsupported('QueryOffset: Ricochet keeps consumer offsets itself'),
      EndTransaction: unsupported('EndTransaction: Ricochet serves no transactional messages'),
      RecallMessage: unsupported('RecallMessage: Ricochet cannot recall a stored message'),
      SyncLiteSubscription: unsupported('SyncLiteSubscription: Ricochet has no lite topics'),
    };
    return implementation as UntypedServiceImplementation;
  }

  /** Answer every waiting receive and release every push delivery: the broker is closing. */
  close(): void {
    for (const receive of this.#receives) receive.abort();
    this.#consumption.clients.closeAll();
  }

  /**
   * `ReceiveMessage`'s frames, in the proxy's order: a status, one frame per message (with the MD5
   * body digest every official client checks), a delivery timestamp, then the end. Nothing to
   * deliver is MESSAGE_NOT_FOUND, which the clients read as an empty receive.
   */
  readonly #receiveMessage: handleServerStreamingCall<ReceiveMessageRequest, ReceiveMessageResponse> = (
    stream,
  ) => {
    const ended = new AbortController();
    this.#receives.add(ended);
    stream.on('cancelled', () => ended.abort());
    const write = (frame: ReceiveMessageResponse) => {
      if (!stream.cancelled) stream.write(frame);
    };
    const finish = (answer: RocketStatus) => {
      if (answer.code !== 'OK') write({ status: answer });
      write({ deliveryTimestamp: durationOf(this.#options.clock.now()) });
      this.#receives.delete(ended);
      if (!stream.cancelled) stream.end();
    };
    const connection = stream.getPeer();
    const waits = (millisOf(stream.request.longPollingTimeout) ?? 0) > 0;
    const waiting = this.#waitingByConnection.get(connection) ?? 0;
    if (waits) this.#waitingByConnection.set(connection, waiting + 1);
    const received = this.#begin(stream.metadata).then((call) => {
      // As on every transport: a connection may hold so many long polls, and one more is 530.
      const refusal = waits ? this.#options.limits.checkWaitingReceive(waiting) : undefined;
      if (refusal) throw refusal;
      return this.#consumption.receive(
        stream.request,
        call,
        deadlineMsOf(stream.getDeadline()),
        ended.signal,
      );
    });
    received
      .finally(() => {
        if (!waits) return;
        const left = (this.#waitingByConnection.get(connection) ?? 1) - 1;
        if (left === 0) this.#waitingByConnection.delete(connection);
        else this.#waitingByConnection.set(connection, left);
      })
      .then((answer) => {
        if ('status' in answer) return finish(answer.status);
        const { messages, invisibleDurationMs } = answer;
        if (messages.length === 0) return finish(status('MESSAGE_NOT_FOUND', 'no message to receive'));
        write({ status: OK_STATUS });
        for (const message of messages) {
          write({ message: rocketMessageOf(message, { invisibleDurationMs, storeHost: 'ricochet' }) });
        }
        finish(OK_STATUS);
      })
      .catch((error: unknown) => finish(this.#failure(error)));
  };

  readonly #telemetry: handleBidiStreamingCall<TelemetryCommand, TelemetryCommand> = (stream) => {
    this.#begin(stream.metadata).then(
      (call) =>
        serveTelemetry(stream, call, this.#options, this.#consumption, (error) => this.#failure(error)),
      (error: unknown) => {
        stream.write({ status: this.#failure(error) });
        stream.end();
      },
    );
  };

  /** A call may go on: the broker takes work, and its headers authenticate it. */
  #begin(metadata: Metadata): Promise<RocketCall> {
    if (!this.#options.accepting()) {
      return Promise.reject(BrokerError.of('BROKER_UNAVAILABLE', 'the broker is shutting down'));
    }
    try {
      return Promise.resolve(authenticateCall(metadata, this.#options.access, this.#options.clock));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #unary<Request>(
    handler: (request: Request, call: RocketCall) => Promise<object>,
  ): handleUnaryCall<Request, object> {
    return (unary, callback) => {
      this.#begin(unary.metadata)
        .then((call) => handler(unary.request, call))
        .then(
          (response) => callback(null, response),
          (error: unknown) => callback(null, { status: this.#failure(error) }),
        );
    };
  }

  #unsupported(reason: string): handleUnaryCall<object, object> {
    return (_call, callback) => callback(null, { status: status('UNSUPPORTED', reason) });
  }

  #unsupportedStream(reason: string): handleServerStreamingCall<object, object> {
    return (stream) => {
      stream.write({ status: status('UNSUPPORTED', reason) });
      stream.end();
    };
  }

  #failure(error: unknown): RocketStatus {
    if (error instanceof BrokerError) this.#options.engine.metrics.rejected(error.code);
    else this.#options.log.error({ err: error }, 'a RocketMQ request failed');
    return rocketStatusOf(error);
  }
}

function deadlineMsOf(deadline: Date | number): number {
  const ms = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(ms) ? ms : Number.POSITIVE_INFINITY;
}
