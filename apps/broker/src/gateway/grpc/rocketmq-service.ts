import type {
  handleBidiStreamingCall,
  handleServerStreamingCall,
  handleUnaryCall,
  Metadata,
  ServerUnaryCall,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { Clock } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { BrokerService } from '../../engine/broker-service.js';
import { outgoingOf, rocketMessageOf } from './rocketmq-messages.js';
import { RocketPushConsumers } from './rocketmq-push.js';
import {
  type AckMessageRequest,
  type AckMessageResultEntry,
  type ChangeInvisibleDurationRequest,
  durationOf,
  type Endpoints,
  type ForwardMessageToDeadLetterQueueRequest,
  type HeartbeatRequest,
  type MessageQueue,
  type MessageType,
  millisOf,
  type NotifyClientTerminationRequest,
  type QueryAssignmentRequest,
  type QueryRouteRequest,
  type ReceiveMessageRequest,
  type ReceiveMessageResponse,
  type RocketStatus,
  type SendMessageRequest,
  type SendResultEntry,
  type TelemetryCommand,
} from './rocketmq-schema.js';
import { settingsAnswer } from './rocketmq-settings.js';
import { OK_STATUS, rocketStatusOf, statusOfPayload } from './rocketmq-status.js';

/** S2's bounds on a lease, and S4's on a change of it. */
const MIN_INVISIBLE_MS = 10;
const MAX_INVISIBLE_MS = 12 * 60 * 60 * 1_000;
/** A receive answers this long before the client's deadline, so its frames arrive in time. */
const DEADLINE_MARGIN_MS = 500;
/** Ricochet's receive cap (S2): a larger RocketMQ batch is served 32 at a time. */
const MAX_BATCH_SIZE = 32;

export interface RocketServiceOptions {
  readonly engine: BrokerService;
  readonly log: FastifyBaseLogger;
  readonly clock: Clock;
  readonly maxBodyBytes: number;
  /** What the broker tells consumers to long-poll for, and the longest poll it holds. */
  readonly longPollingTimeoutMs: number;
  /** Whether the broker still takes new work (false while draining). */
  readonly accepting: () => boolean;
  /** Topics and groups a client names that do not exist yet are created (`autoCreateTopics`). */
  readonly autoCreateTopics: boolean;
}

/**
 * `apache.rocketmq.v2.MessagingService` onto the broker's service: each RPC is a call of the same
 * {@link BrokerService} Ricochet's own sessions call, so every rule of DESIGN §3 holds as it does
 * for them (and, with queues spread, requests reach the queue's owner the same way). Nothing
 * here decides a message's fate: it translates.
 *
 * One error path: a handler throws, and {@link unary} or the stream's catch answers with the
 * status of the error (a catalogue `BrokerError` keeps its meaning; anything else is
 * INTERNAL_ERROR and logged). Every reply carries a status: the clients treat a missing one as OK
 * but `CODE_UNSPECIFIED` as a failure.
 */
export class RocketMessagingService {
  readonly #options: RocketServiceOptions;
  readonly #push: RocketPushConsumers;
  /** Receives in progress, answered empty when the broker closes. */
  readonly #receives = new Set<AbortController>();

  constructor(options: RocketServiceOptions) {
    this.#options = options;
    this.#push = new RocketPushConsumers(options.engine);
  }

  /** The handlers grpc-js serves, by method name. */
  handlers(): UntypedServiceImplementation {
    const implementation: Record<string, unknown> = {
      QueryRoute: this.#unary((request: QueryRouteRequest) => this.#queryRoute(request)),
      Heartbeat: this.#unary((_request: HeartbeatRequest) => Promise.resolve({ status: OK_STATUS })),
      SendMessage: this.#unary((request: SendMessageRequest) => this.#sendMessage(request)),
      QueryAssignment: this.#unary((request: QueryAssignmentRequest) => this.#queryAssignment(request)),
      ReceiveMessage: this.#receiveMessage,
      AckMessage: this.#unary((request: AckMessageRequest) => this.#ackMessage(request)),
      ChangeInvisibleDuration: this.#unary((request: ChangeInvisibleDurationRequest) =>
        this.#changeInvisibleDuration(request),
      ),
      ForwardMessageToDeadLetterQueue: this.#unary((request: ForwardMessageToDeadLetterQueueRequest) =>
        this.#forwardToDeadLetterQueue(request),
      ),
      Telemetry: this.#telemetry,
      NotifyClientTermination: this.#unary((_request: NotifyClientTerminationRequest, metadata) => {
        const clientId = clientIdOf(metadata);
        if (clientId !== undefined) this.#push.terminated(clientId);
        return Promise.resolve({ status: OK_STATUS });
      }),
      PullMessage: this.#unsupportedStream(
        'PullMessage: Ricochet serves receive with leases, not offset pulls',
      ),
    };
    for (const name of ['UpdateOffset', 'GetOffset', 'QueryOffset']) {
      implementation[name] = this.#unsupported(`${name}: Ricochet keeps consumer offsets itself`);
    }
    implementation.EndTransaction = this.#unsupported(
      'EndTransaction: Ricochet serves no transactional messages',
    );
    implementation.RecallMessage = this.#unsupported(
      'RecallMessage: Ricochet cannot recall a stored message',
    );
    implementation.SyncLiteSubscription = this.#unsupported(
      'SyncLiteSubscription: Ricochet has no lite topics',
    );
    return implementation as UntypedServiceImplementation;
  }

  /** Answer every waiting receive and release every push lease: the broker is closing. */
  close(): void {
    for (const receive of this.#receives) receive.abort();
    this.#push.closeAll();
  }

  // ---- Routes ----

  async #queryRoute(request: QueryRouteRequest) {
    const topic = request.topic?.name;
    if (topic === undefined || topic === '') return { status: status('ILLEGAL_TOPIC', 'no topic named') };
    const queue = await this.#queueOf(topic, request.topic?.resourceNamespace ?? '', request.endpoints);
    if ('status' in queue) return queue;
    return { status: OK_STATUS, messageQueues: [queue] };
  }

  async #queryAssignment(request: QueryAssignmentRequest) {
    const topic = request.topic?.name;
    if (topic === undefined || topic === '') return { status: status('ILLEGAL_TOPIC', 'no topic named') };
    const queue = await this.#queueOf(topic, request.topic?.resourceNamespace ?? '', request.endpoints);
    if ('status' in queue) return queue;
    return { status: OK_STATUS, assignments: [{ messageQueue: queue }] };
  }

  /**
   * A topic's one queue, as the official clients need it: id 0 (the Node client uses no other),
   * read-write, on a broker whose endpoints are the ones the client reached this broker by, so
   * sends, receives and Telemetry come back here (as RocketMQ's cluster-mode proxy answers).
   */
  async #queueOf(
    topic: string,
    namespace: string,
    endpoints: Endpoints | undefined,
  ): Promise<MessageQueue | { status: RocketStatus }> {
    const view = await this.#options.engine.describeTopic(topic);
    if (view === undefined && !this.#options.autoCreateTopics) {
      return { status: status('TOPIC_NOT_FOUND', `topic "${topic}" does not exist`) };
    }
    const type = view?.config.type ?? 'normal';
    const accepted: MessageType[] =
      type === 'fifo' ? ['FIFO'] : type === 'delay' ? ['DELAY'] : ['NORMAL', 'DELAY'];
    return {
      topic: { resourceNamespace: namespace, name: topic },
      id: 0,
      permission: 'READ_WRITE',
      broker: { name: 'ricochet', id: 0, endpoints: endpoints ?? {} },
      acceptMessageTypes: accepted,
    };
  }

  // ---- Producing ----

  async #sendMessage(request: SendMessageRequest) {
    const messages = request.messages ?? [];
    if (messages.length === 0) return { status: status('BAD_REQUEST', 'no messages to send'), entries: [] };
    const nowMs = this.#options.clock.now();
    const converted = messages.map((message) => outgoingOf(message, nowMs, this.#options.maxBodyBytes));
    const valid = converted.flatMap((entry) => (entry.ok ? [entry.message] : []));
    const receipts = valid.length === 0 ? [] : await this.#options.engine.send(valid);
    let next = 0;
    const entries: SendResultEntry[] = converted.map((entry) => {
      if (!entry.ok)
        return { status: entry.status, messageId: entry.messageId, transactionId: '', offset: 0 };
      const receipt = receipts[next++];
      if (receipt === undefined) throw new Error('the engine answered fewer receipts than messages');
      if (!receipt.ok) {
        return {
          status: statusOfPayload(receipt.error),
          messageId: receipt.messageId,
          transactionId: '',
          offset: 0,
        };
      }
      // No transactions here: the message id stands in for the transaction id the proxy fills in.
      return {
        status: OK_STATUS,
        messageId: receipt.messageId,
        transactionId: receipt.messageId,
        offset: receipt.offset,
      };
    });
    return { status: overallStatus(entries.map((entry) => entry.status)), entries };
  }

  // ---- Consuming ----

  readonly #receiveMessage: handleServerStreamingCall<ReceiveMessageRequest, ReceiveMessageResponse> = (
    call,
  ) => {
    const ended = new AbortController();
    this.#receives.add(ended);
    call.on('cancelled', () => ended.abort());
    const write = (frame: ReceiveMessageResponse) => {
      if (!call.cancelled) call.write(frame);
    };
    const finish = (answer: RocketStatus) => {
      if (answer.code !== 'OK') write({ status: answer });
      write({ deliveryTimestamp: durationOf(this.#options.clock.now()) });
      this.#receives.delete(ended);
      if (!call.cancelled) call.end();
    };
    this.#receive(call.request, clientIdOf(call.metadata), deadlineMsOf(call.getDeadline()), ended.signal)
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

  async #receive(
    request: ReceiveMessageRequest,
    clientId: string | undefined,
    deadlineMs: number,
    signal: AbortSignal,
  ) {
    const group = request.group?.name;
    const topic = request.messageQueue?.topic?.name;
    if (clientId === undefined) return { status: status('CLIENT_ID_REQUIRED', 'x-mq-client-id is missing') };
    if (group === undefined || group === '')
      return { status: status('ILLEGAL_CONSUMER_GROUP', 'no group named') };
    if (topic === undefined || topic === '') return { status: status('ILLEGAL_TOPIC', 'no topic named') };
    if (request.filterExpression?.type === 'SQL') {
      return {
        status: status(
          'ILLEGAL_FILTER_EXPRESSION',
          'Ricochet filters by tag only; SQL92 filters are not served',
        ),
      };
    }
    const batchSize = request.batchSize ?? 0;
    if (batchSize < 1)
      return { status: status('BAD_REQUEST', `batch_size ${batchSize}: ask for at least 1`) };
    const polling = millisOf(request.longPollingTimeout) ?? 0;
    if (polling < 0) return { status: status('ILLEGAL_POLLING_TIME', 'long_polling_timeout is negative') };
    const untilDeadline = deadlineMs - this.#options.clock.now() - DEADLINE_MARGIN_MS;
    const awaitDurationMs = Math.max(0, Math.min(polling, this.#options.longPollingTimeoutMs, untilDeadline));
    const given = request.filterExpression?.expression;
    const expression = given === undefined || given === '' ? '*' : given;
    const maxMessages = Math.min(batchSize, MAX_BATCH_SIZE);
    if (request.autoRenew === true) {
      // A push consumer: push deliveries, leased for the group's consumption timeout (P2).
      const view = await this.#options.engine.describeGroup(group);
      const messages = await this.#push.receive({
        clientId,
        group,
        topic,
        expression,
        maxMessages,
        awaitDurationMs,
        signal,
      });
      return { messages, invisibleDurationMs: view?.config.consumptionTimeoutMs ?? 0 };
    }
    const invisibleDurationMs = millisOf(request.invisibleDuration);
    if (
      invisibleDurationMs === undefined ||
      invisibleDurationMs < MIN_INVISIBLE_MS ||
      invisibleDurationMs > MAX_INVISIBLE_MS
    ) {
      return {
        status: status(
          'ILLEGAL_INVISIBLE_TIME',
          `invisible_duration must be ${MIN_INVISIBLE_MS} ms to 12 h (S2)`,
        ),
      };
    }
    const messages = await this.#options.engine.receive({
      group,
      subscriptions: { [topic]: expression },
      maxMessages,
      invisibleDurationMs,
      awaitDurationMs,
      consumerId: clientId,
      signal,
    });
    return { messages, invisibleDurationMs };
  }

  async #ackMessage(request: AckMessageRequest) {
    const entries = request.entries ?? [];
    if (entries.length === 0)
      return { status: status('BAD_REQUEST', 'no entries to acknowledge'), entries: [] };
    const handles = entries.map((entry) => entry.receiptHandle ?? '');
    const failures = await this.#options.engine.ack(handles, undefined);
    this.#push.settled(handles);
    const failed = new Map(failures.map((failure) => [failure.index, failure.error]));
    const results: AckMessageResultEntry[] = entries.map((entry, index) => {
      const error = failed.get(index);
      return {
        messageId: entry.messageId ?? '',
        receiptHandle: entry.receiptHandle ?? '',
        status: error === undefined ? OK_STATUS : statusOfPayload(error),
      };
    });
    return { status: overallStatus(results.map((result) => result.status)), entries: results };
  }

  /**
   * S4 for a simple consumer's lease. For a push delivery it is the RocketMQ push consumer's nack:
   * a failed delivery (P2) retried after the backoff the client asks for, which is the group's
   * policy the Telemetry settings gave it; at max attempts the message goes to the DLQ at once
   * (P4). The handle it answers with is the settled one: a push consumer never uses it again.
   */
  async #changeInvisibleDuration(request: ChangeInvisibleDurationRequest) {
    const handle = request.receiptHandle ?? '';
    const ms = millisOf(request.invisibleDuration);
    if (ms === undefined || ms < 0 || ms > MAX_INVISIBLE_MS) {
      return { status: status('ILLEGAL_INVISIBLE_TIME', 'invisible_duration must be 0 ms to 12 h (S4)') };
    }
    if (this.#push.isPushDelivery(handle)) {
      const [failure] = await this.#options.engine.nack(
        [{ receiptHandle: handle, retryAfterMs: ms, reason: 'FAILURE (RocketMQ push consumer nack)' }],
        undefined,
      );
      this.#push.settled([handle]);
      return {
        status: failure === undefined ? OK_STATUS : statusOfPayload(failure.error),
        receiptHandle: handle,
      };
    }
    const changed = await this.#options.engine.changeInvisibleDuration(handle, ms);
    return { status: OK_STATUS, receiptHandle: changed.receiptHandle };
  }

  /** D3: the client gave up on the message (a FIFO consumer past its attempts). */
  async #forwardToDeadLetterQueue(request: ForwardMessageToDeadLetterQueueRequest) {
    const handle = request.receiptHandle ?? '';
    const [failure] = await this.#options.engine.nack(
      [
        {
          receiptHandle: handle,
          deadLetter: true,
          reason: `forwarded to the DLQ by a RocketMQ client at delivery attempt ${request.deliveryAttempt ?? 0} of ${request.maxDeliveryAttempts ?? 0}`,
        },
      ],
      undefined,
    );
    this.#push.settled([handle]);
    return { status: failure === undefined ? OK_STATUS : statusOfPayload(failure.error) };
  }

  // ---- The session ----

  /**
   * The client's session: it sends its settings, and its start waits until they are answered with
   * the broker's. The stream's life is the client's: when its last stream ends, its push leases
   * are released (C2).
   */
  readonly #telemetry: handleBidiStreamingCall<TelemetryCommand, TelemetryCommand> = (call) => {
    const clientId = clientIdOf(call.metadata);
    if (clientId === undefined) {
      call.write({ status: status('CLIENT_ID_REQUIRED', 'x-mq-client-id is missing') });
      call.end();
      return;
    }
    this.#push.streamOpened(clientId);
    let open = true;
    const closed = () => {
      if (!open) return;
      open = false;
      this.#push.streamClosed(clientId);
    };
    call.on('data', (command: TelemetryCommand) => {
      if (command.settings === undefined) return;
      this.#answerSettings(command)
        .then((answer) => {
          if (open && !call.cancelled) call.write(answer);
        })
        .catch((error: unknown) => {
          if (open && !call.cancelled) call.write({ status: this.#failure(error) });
        });
    });
    call.on('end', () => {
      closed();
      call.end();
    });
    call.on('cancelled', closed);
    call.on('error', closed);
  };

  async #answerSettings(command: TelemetryCommand): Promise<TelemetryCommand> {
    const settings = command.settings ?? {};
    const subscription = settings.subscription;
    const group = subscription?.group?.name;
    if (subscription === undefined || group === undefined || group === '') {
      return {
        status: OK_STATUS,
        settings: settingsAnswer(settings, {
          maxBodyBytes: this.#options.maxBodyBytes,
          longPollingTimeoutMs: this.#options.longPollingTimeoutMs,
        }),
      };
    }
    const subscriptions: Record<string, string> = {};
    for (const entry of subscription.subscriptions ?? []) {
      const topic = entry.topic?.name;
      if (topic === undefined || topic === '') continue;
      if (entry.expression?.type === 'SQL') {
        throw BrokerError.of(
          'BAD_REQUEST',
          `topic "${topic}": Ricochet filters by tag only; SQL92 is not served`,
        );
      }
      subscriptions[topic] = entry.expression?.expression || '*';
    }
    // As Ricochet's own consumers do at start: the group exists and its position in each topic
    // is taken now (startFrom), so a message sent after start is never missed.
    if (Object.keys(subscriptions).length > 0) await this.#options.engine.register(group, subscriptions);
    const view = await this.#options.engine.describeGroup(group);
    if (view === undefined) throw BrokerError.of('NOT_FOUND', `group "${group}" does not exist`, { group });
    return {
      status: OK_STATUS,
      settings: settingsAnswer(settings, {
        maxBodyBytes: this.#options.maxBodyBytes,
        group: view.config,
        longPollingTimeoutMs: this.#options.longPollingTimeoutMs,
      }),
    };
  }

  // ---- One error path ----

  #unary<Request>(
    handler: (request: Request, metadata: Metadata) => Promise<object>,
  ): handleUnaryCall<Request, object> {
    return (call: ServerUnaryCall<Request, object>, callback) => {
      const answer = this.#options.accepting()
        ? handler(call.request, call.metadata)
        : Promise.reject(BrokerError.of('BROKER_UNAVAILABLE', 'the broker is shutting down'));
      answer.then(
        (response) => callback(null, response),
        (error: unknown) => callback(null, { status: this.#failure(error) }),
      );
    };
  }

  #unsupported(reason: string): handleUnaryCall<object, object> {
    return (_call, callback) => callback(null, { status: status('UNSUPPORTED', reason) });
  }

  #unsupportedStream(reason: string): handleServerStreamingCall<object, object> {
    return (call) => {
      call.write({ status: status('UNSUPPORTED', reason) });
      call.end();
    };
  }

  #failure(error: unknown): RocketStatus {
    if (error instanceof BrokerError) this.#options.engine.metrics.rejected(error.code);
    else this.#options.log.error({ err: error }, 'a RocketMQ request failed');
    return rocketStatusOf(error);
  }
}

function status(code: RocketStatus['code'], message: string): RocketStatus {
  return { code, message };
}

/**
 * One status for a batch: OK when every entry is, the entries' own when they all agree, and
 * MULTIPLE_RESULTS otherwise (the proxy's rule; the clients then read each entry).
 */
function overallStatus(statuses: readonly RocketStatus[]): RocketStatus {
  const [first] = statuses;
  if (first === undefined) return OK_STATUS;
  if (statuses.every((entry) => entry.code === first.code)) return first;
  return status('MULTIPLE_RESULTS', 'the entries have different results');
}

function clientIdOf(metadata: Metadata): string | undefined {
  const [value] = metadata.get('x-mq-client-id');
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function deadlineMsOf(deadline: Date | number): number {
  const ms = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(ms) ? ms : Number.POSITIVE_INFINITY;
}
