import type { OutgoingMessage, SendReceipt } from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { AccessControl } from '../../auth/access-control.js';
import type { ConnectionLimits } from '../connection-limits.js';
import { ConnectionUsage, RequestPipeline } from '../pipeline/request-pipeline.js';
import { sliceOf, TurnMerger } from '../pipeline/turn-merger.js';
import type { GrpcHandler } from './grpc-server.js';
import type { GrpcCall, GrpcWriter } from './grpc-stream-call.js';
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
  /**
   * The broker's per-connection caps, as every front door's requests meet them: past a cap a
   * request is TOO_MANY_REQUESTS (as 530).
   */
  readonly limits: Pick<ConnectionLimits, 'checkRequest'>;
}

/** The signal of a receive that does not wait: nothing cuts it short. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * `apache.rocketmq.v2.MessagingService` onto the broker's service: each RPC is a call of the same
 * `BrokerService` Ricochet's own sessions call, authenticated and permitted as theirs are, so
 * every rule of DESIGN §3 holds as it does for them (and, with queues spread, requests reach the
 * queue's owner the same way). Nothing here decides a message's fate: it translates.
 *
 * One error path: a handler throws, and the call's wrapper answers with the status of the error
 * (a catalogue `BrokerError` keeps its meaning; anything else is INTERNAL_ERROR and logged).
 * Every reply carries a status: the clients treat a missing one as OK but `CODE_UNSPECIFIED` as a
 * failure.
 */
export class RocketMessagingService {
  readonly #options: RocketServiceOptions;
  readonly #consumption: RocketConsumption;
  /** RocketMQ's clients send one message per call: the calls of a turn are stored together. */
  readonly #sends: TurnMerger<OutgoingMessage, SendReceipt[]>;
  /** Receives in progress, answered at once when the broker closes. */
  readonly #receives = new Set<AbortController>();
  /** The stages every front door's requests pass: draining, access, caps, counting, failures. */
  readonly #pipeline: RequestPipeline;
  /** Each HTTP/2 connection's requests in flight, by the connection, for the per-connection caps. */
  readonly #usage = new WeakMap<object, ConnectionUsage>();

  constructor(options: RocketServiceOptions) {
    this.#options = options;
    this.#consumption = new RocketConsumption(options);
    this.#sends = new TurnMerger((messages) => options.engine.send(messages), sliceOf);
    this.#pipeline = new RequestPipeline({
      accepting: options.accepting,
      limits: options.limits,
      metrics: options.engine.metrics,
      log: options.log,
    });
  }

  /** The handlers the gRPC server serves, by method name. */
  handlers(): Record<string, GrpcHandler> {
    const deps: RocketDeps = this.#options;
    const consumption = this.#consumption;
    const unsupported = (reason: string) => this.#unsupported(reason);
    return {
      QueryRoute: this.#unary((request: QueryRouteRequest, call) => queryRoute(deps, request, call)),
      QueryAssignment: this.#unary((request: QueryAssignmentRequest, call) =>
        queryAssignment(deps, request, call),
      ),
      Heartbeat: this.#unary(() => Promise.resolve({ status: OK_STATUS })),
      SendMessage: this.#unary((request: SendMessageRequest, call) =>
        sendMessages(deps, request, call, (messages) => this.#sends.submit(messages)),
      ),
      ReceiveMessage: { kind: 'serverStream', handle: this.#receiveMessage },
      AckMessage: this.#unary((request: AckMessageRequest, call) => consumption.ack(request, call)),
      ChangeInvisibleDuration: this.#unary((request: ChangeInvisibleDurationRequest, call) =>
        consumption.changeInvisibleDuration(request, call),
      ),
      ForwardMessageToDeadLetterQueue: this.#unary((request: ForwardMessageToDeadLetterQueueRequest, call) =>
        consumption.forwardToDeadLetterQueue(request, call),
      ),
      Telemetry: { kind: 'bidi', handle: this.#telemetry },
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
  readonly #receiveMessage = (
    request: ReceiveMessageRequest,
    stream: GrpcCall,
    out: GrpcWriter<ReceiveMessageResponse>,
  ): void => {
    const waits = (millisOf(request.longPollingTimeout) ?? 0) > 0;
    // Only a receive that waits can be cut short: one that does not makes no controller (a signal
    // costs microseconds to make, and a simple consumer's receive may come every 32 messages).
    const ended = waits ? new AbortController() : undefined;
    if (ended !== undefined) {
      this.#receives.add(ended);
      stream.onCancelled(() => ended.abort());
    }
    const write = (frame: ReceiveMessageResponse) => out.write(frame);
    const finish = (answer: RocketStatus) => {
      if (answer.code !== 'OK') write({ status: answer });
      write({ deliveryTimestamp: durationOf(this.#options.clock.now()) });
      if (ended !== undefined) this.#receives.delete(ended);
      out.end();
    };
    // As on every transport, the receive is counted in its connection's usage, and a long poll past
    // the connection's cap is 530 (the pipeline's caps stage).
    this.#begin(stream)
      .then((call) =>
        this.#consumption.receive(request, call, stream.deadlineMs, ended?.signal ?? NEVER_ABORTED),
      )
      .then((answer) => {
        if ('status' in answer) return finish(answer.status);
        const { messages, invisibleDurationMs } = answer;
        if (messages.length === 0) return finish(status('MESSAGE_NOT_FOUND', 'no message to receive'));
        write({ status: OK_STATUS });
        const lease = { invisibleDuration: durationOf(invisibleDurationMs), storeHost: 'ricochet' };
        for (const message of messages) write({ message: rocketMessageOf(message, lease) });
        finish(OK_STATUS);
      })
      .catch((error: unknown) => finish(this.#failure(error)));
  };

  readonly #telemetry = (stream: GrpcCall, out: GrpcWriter<TelemetryCommand>) => {
    // Read synchronously: the client's first command may come in the same chunk as its headers.
    let call: RocketCall;
    try {
      call = this.#authenticated(stream);
    } catch (error) {
      out.write({ status: this.#failure(error) });
      out.end();
      return { message: () => undefined, end: () => undefined };
    }
    return serveTelemetry(stream, out, call, this.#options, this.#consumption, (error) =>
      this.#failure(error),
    );
  };

  /** A call may go on: the broker takes work, and its headers authenticate it. */
  #begin(headers: Pick<GrpcCall, 'header' | 'connection'>): Promise<RocketCall> {
    try {
      return Promise.resolve(this.#authenticated(headers));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** @throws BrokerError BROKER_UNAVAILABLE while the broker drains, UNAUTHORIZED for bad headers. */
  #authenticated(grpcCall: Pick<GrpcCall, 'header' | 'connection'>): RocketCall {
    const draining = this.#pipeline.draining();
    if (draining !== undefined) throw draining;
    return authenticateCall(grpcCall, this.#options.access, this.#options.clock, {
      pipeline: this.#pipeline,
      usage: this.#usageOf(grpcCall.connection),
    });
  }

  #usageOf(connection: object): ConnectionUsage {
    let usage = this.#usage.get(connection);
    if (usage === undefined) {
      usage = new ConnectionUsage();
      this.#usage.set(connection, usage);
    }
    return usage;
  }

  #unary<Request>(handler: (request: Request, call: RocketCall) => Promise<object>): GrpcHandler {
    return {
      kind: 'unary',
      // Authenticated and begun in the same turn, without a promise of its own: one call per
      // message makes every hop a message's cost.
      handle: (request: Request, grpcCall: GrpcCall) => {
        let answer: Promise<object>;
        try {
          answer = handler(request, this.#authenticated(grpcCall));
        } catch (error) {
          return Promise.resolve({ status: this.#failure(error) });
        }
        return answer.catch((error: unknown) => ({ status: this.#failure(error) }));
      },
    };
  }

  #unsupported(reason: string): GrpcHandler {
    return { kind: 'unary', handle: () => Promise.resolve({ status: status('UNSUPPORTED', reason) }) };
  }

  #unsupportedStream(reason: string): GrpcHandler {
    return {
      kind: 'serverStream',
      handle: (_request: object, _call: GrpcCall, out: GrpcWriter<object>) => {
        out.write({ status: status('UNSUPPORTED', reason) });
        out.end();
      },
    };
  }

  /** The pipeline's last stage (counted, a bug logged), in RocketMQ's words. */
  #failure(error: unknown): RocketStatus {
    return rocketStatusOf(this.#pipeline.failed(error, { front: 'rocketmq-grpc' }));
  }
}
