import type { DeliveredMessage } from '@ricochet/protocol';
import type { SettleFailure } from '../../engine/index.js';
import { failuresOf, TurnMerger } from '../pipeline/turn-merger.js';
import type { RequestFrame } from '../session-access.js';
import { admitted, type RocketCall, type RocketDeps } from './rocketmq-call.js';
import { RocketPushConsumers } from './rocketmq-push.js';
import {
  type AckMessageRequest,
  type AckMessageResultEntry,
  type ChangeInvisibleDurationRequest,
  type ForwardMessageToDeadLetterQueueRequest,
  millisOf,
  type ReceiveMessageRequest,
  type RocketStatus,
} from './rocketmq-schema.js';
import { OK_STATUS, overallStatus, status, statusOfPayload } from './rocketmq-status.js';

/** S2's bounds on a lease, and S4's on a change of it. */
const MIN_INVISIBLE_MS = 10;
const MAX_INVISIBLE_MS = 12 * 60 * 60 * 1_000;
/** A receive answers this long before the client's deadline, so its frames arrive in time. */
const DEADLINE_MARGIN_MS = 500;
/** Ricochet's receive cap (S2): a larger RocketMQ batch is served 32 at a time. */
const MAX_BATCH_SIZE = 32;
/**
 * How long a group's consumption timeout, read for a push receive's answer, is reused. A push
 * consumer receives many times a second; describing the group each time (on a spread cluster
 * possibly a call to another broker) would cost more than the receive. A changed timeout shows
 * in the answers within this long; the leases themselves always take the engine's current one.
 */
const CONSUMPTION_TIMEOUT_REUSE_MS = 1_000;

/** What a receive leased, or the status it answers with instead. */
export type Received =
  | { readonly messages: readonly DeliveredMessage[]; readonly invisibleDurationMs: number }
  | { readonly status: RocketStatus };

/**
 * The consuming RPCs. A receive without `auto_renew` is a simple consumer's (S1–S5: a lease of
 * the asked invisible duration); one with it is a push consumer's ({@link RocketPushConsumers}:
 * P1–P5 and C2). Settling is one path for both, by receipt handle, with the permission of the
 * group and topic the handle names, as on every other transport.
 */
export class RocketConsumption {
  readonly #deps: RocketDeps;
  readonly #push: RocketPushConsumers;
  /** Per group: its consumption timeout and when it was read ({@link CONSUMPTION_TIMEOUT_REUSE_MS}). */
  readonly #consumptionTimeouts = new Map<string, { readonly ms: number; readonly readAtMs: number }>();
  /**
   * The clients ack one entry per call: the acks of a turn are settled together, one merge per
   * principal, whose name each settle records (DESIGN §7).
   */
  readonly #acks = new Map<string | undefined, TurnMerger<string, SettleFailure[]>>();

  constructor(deps: RocketDeps) {
    this.#deps = deps;
    this.#push = new RocketPushConsumers(deps.engine, deps.clock);
  }

  /** The clients' lives, as their Telemetry streams and `NotifyClientTermination` tell them. */
  get clients(): Pick<RocketPushConsumers, 'streamOpened' | 'streamClosed' | 'terminated' | 'closeAll'> {
    return this.#push;
  }

  /** `ReceiveMessage`; the answer is written as stream frames by the caller. */
  async receive(
    request: ReceiveMessageRequest,
    call: RocketCall,
    deadlineMs: number,
    signal: AbortSignal,
  ): Promise<Received> {
    const { clientId } = call;
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
    const push = request.autoRenew === true;
    const leaseMs = push ? undefined : millisOf(request.invisibleDuration);
    if (!push && (leaseMs === undefined || leaseMs < MIN_INVISIBLE_MS || leaseMs > MAX_INVISIBLE_MS)) {
      return {
        status: status(
          'ILLEGAL_INVISIBLE_TIME',
          `invisible_duration must be ${MIN_INVISIBLE_MS} ms to 12 h (S2)`,
        ),
      };
    }
    const untilDeadline = deadlineMs - this.#deps.clock.now() - DEADLINE_MARGIN_MS;
    const awaitDurationMs = Math.max(0, Math.min(polling, this.#deps.longPollingTimeoutMs, untilDeadline));
    const given = request.filterExpression?.expression;
    const expression = given === undefined || given === '' ? '*' : given;
    const maxMessages = Math.min(batchSize, MAX_BATCH_SIZE);
    // The client protocol's receive this is, through the pipeline's access and caps stages (a long
    // poll counts against the connection's waiting receives). A push consumer's lease is the
    // group's consumption timeout, read once admitted; admission does not read the lease.
    const receive: RequestFrame = {
      type: 'receive',
      id: 0,
      group,
      subscriptions: { [topic]: expression },
      maxMessages,
      invisibleDurationMs: leaseMs ?? 0,
      awaitDurationMs,
    };
    admitted(call, receive);
    return call.pipeline.run(receive, call.usage, async () => {
      if (push) {
        // A push consumer: push deliveries, leased for the group's consumption timeout (P2).
        const invisibleDurationMs = await this.#consumptionTimeoutOf(group);
        const messages = await this.#push.receive({
          clientId,
          group,
          topic,
          expression,
          maxMessages,
          awaitDurationMs,
          signal,
        });
        return { messages, invisibleDurationMs };
      }
      const invisibleDurationMs = leaseMs as number;
      const messages = await this.#deps.engine.receive({
        group,
        subscriptions: { [topic]: expression },
        maxMessages,
        invisibleDurationMs,
        awaitDurationMs,
        consumerId: clientId,
        signal,
      });
      return { messages, invisibleDurationMs };
    });
  }

  /** `AckMessage` (S3; P1's commit): one status per entry, MULTIPLE_RESULTS when they differ. */
  async ack(request: AckMessageRequest, call: RocketCall) {
    const entries = request.entries ?? [];
    if (entries.length === 0)
      return { status: status('BAD_REQUEST', 'no entries to acknowledge'), entries: [] };
    const handles = entries.map((entry) => entry.receiptHandle ?? '');
    const settle: RequestFrame = { type: 'ack', id: 0, receiptHandles: handles };
    const principal = admitted(call, settle);
    // Counted in the connection's usage while it runs, without a promise of its own per call.
    let failures: SettleFailure[];
    call.usage.begin(settle);
    try {
      failures = await this.#ackMergerOf(principal).submit(handles);
    } finally {
      call.usage.end(settle);
    }
    this.#push.settled(handles);
    // Nearly always none failed: then no map of them.
    const failed =
      failures.length === 0 ? undefined : new Map(failures.map((failure) => [failure.index, failure.error]));
    const results: AckMessageResultEntry[] = entries.map((entry, index) => {
      const error = failed?.get(index);
      return {
        messageId: entry.messageId ?? '',
        receiptHandle: entry.receiptHandle ?? '',
        status: error === undefined ? OK_STATUS : statusOfPayload(error),
      };
    });
    return { status: overallStatus(results.map((result) => result.status)), entries: results };
  }

  #ackMergerOf(principal: string | undefined): TurnMerger<string, SettleFailure[]> {
    let merger = this.#acks.get(principal);
    if (merger === undefined) {
      merger = new TurnMerger((handles) => this.#deps.engine.ack(handles, principal), failuresOf);
      this.#acks.set(principal, merger);
    }
    return merger;
  }

  /**
   * S4 for a simple consumer's lease. For a push delivery it is the RocketMQ push consumer's nack:
   * a failed delivery (P2), retried on the group's schedule (P3, decided by core) whatever delay
   * the client computed: the official clients do not agree on it (the Node client 1.0.8 ignores
   * the backoff the Telemetry settings gave it and asks for 0 ms, so a failed message came back at
   * once), and DESIGN.md §10 says the group's policy decides. At max attempts the message goes to
   * the DLQ at once (P4). The handle it answers with is the settled one: a push consumer never
   * uses it again.
   */
  async changeInvisibleDuration(request: ChangeInvisibleDurationRequest, call: RocketCall) {
    const handle = request.receiptHandle ?? '';
    const ms = millisOf(request.invisibleDuration);
    if (ms === undefined || ms < 0 || ms > MAX_INVISIBLE_MS) {
      return { status: status('ILLEGAL_INVISIBLE_TIME', 'invisible_duration must be 0 ms to 12 h (S4)') };
    }
    if (this.#push.isPushDelivery(handle)) {
      const items = [{ receiptHandle: handle, reason: 'FAILURE (RocketMQ push consumer nack)' }];
      const nack: RequestFrame = { type: 'nack', id: 0, items };
      const principal = admitted(call, nack);
      const [failure] = await call.pipeline.run(nack, call.usage, () =>
        this.#deps.engine.nack(items, principal),
      );
      this.#push.settled([handle]);
      return {
        status: failure === undefined ? OK_STATUS : statusOfPayload(failure.error),
        receiptHandle: handle,
      };
    }
    const change: RequestFrame = {
      type: 'changeInvisibleDuration',
      id: 0,
      receiptHandle: handle,
      invisibleDurationMs: ms,
    };
    admitted(call, change);
    const changed = await call.pipeline.run(change, call.usage, () =>
      this.#deps.engine.changeInvisibleDuration(handle, ms),
    );
    return { status: OK_STATUS, receiptHandle: changed.receiptHandle };
  }

  /** D3: the client gave up on the message (a FIFO push consumer past its attempts). */
  async forwardToDeadLetterQueue(request: ForwardMessageToDeadLetterQueueRequest, call: RocketCall) {
    const handle = request.receiptHandle ?? '';
    const reason = `forwarded to the DLQ by a RocketMQ client at delivery attempt ${request.deliveryAttempt ?? 0} of ${request.maxDeliveryAttempts ?? 0}`;
    const items = [{ receiptHandle: handle, deadLetter: true as const, reason }];
    const nack: RequestFrame = { type: 'nack', id: 0, items };
    const principal = admitted(call, nack);
    const [failure] = await call.pipeline.run(nack, call.usage, () =>
      this.#deps.engine.nack(items, principal),
    );
    this.#push.settled([handle]);
    return { status: failure === undefined ? OK_STATUS : statusOfPayload(failure.error) };
  }

  /** The group's consumption timeout (P2), the lease a push delivery carries; 0 when unknown. */
  async #consumptionTimeoutOf(group: string): Promise<number> {
    const nowMs = this.#deps.clock.now();
    const known = this.#consumptionTimeouts.get(group);
    if (known !== undefined && nowMs - known.readAtMs < CONSUMPTION_TIMEOUT_REUSE_MS) return known.ms;
    const view = await this.#deps.engine.describeGroup(group);
    // Only groups that exist are kept, so the map grows no larger than the broker's groups.
    if (view === undefined) return 0;
    const ms = view.config.consumptionTimeoutMs;
    this.#consumptionTimeouts.set(group, { ms, readAtMs: nowMs });
    return ms;
  }
}
