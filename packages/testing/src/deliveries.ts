import type { MessageGroupView, MessageView } from '@ricochet/protocol';
import { formatDuration } from './duration.js';

/**
 * How a delivery ended, as the broker's history records it. The history's `held` entries (a retry
 * a paused group postponed, DESIGN.md §11) are no delivery, and not listed here.
 */
export type DeliveryResult = Exclude<MessageGroupView['history'][number]['result'], 'held'>;

/** One delivery of a message to a group that has ended, with its virtual times. */
export interface Delivery {
  readonly messageId: string;
  readonly group: string;
  /** Broadcasting groups (B1): the instance (`clientId`) it went to. */
  readonly instance?: string;
  readonly topic: string;
  /** `deliveryAttempt`: 1 on the first delivery (P6). */
  readonly attempt: number;
  readonly consumer: 'push' | 'simple';
  readonly consumerId?: string;
  /** When it was delivered, on the virtual clock (epoch ms). */
  readonly deliveredAt: number;
  /**
   * `deliveredAt` minus the message's `storedAt`: "retried at +10 s, +40 s, +1 min 40 s" reads
   * `[0, 10_000, 40_000, 100_000]` for the first four deliveries of a message sent and failed at once.
   */
  readonly elapsedMs: number;
  /** When it ended, on the virtual clock. */
  readonly settledAt: number;
  readonly result: DeliveryResult;
  /** Why it failed, when it did. */
  readonly reason?: string;
}

/** A delivery the consumer holds now: delivered, not ended yet. */
export interface InflightDelivery {
  readonly messageId: string;
  readonly group: string;
  readonly topic: string;
  readonly attempt: number;
  readonly result: 'inflight';
}

/** What `waitForDelivery` waits for. */
export interface DeliveryQuery {
  readonly group: string;
  readonly messageId: string;
  /** The `deliveryAttempt` to wait for. @default 1 */
  readonly attempt?: number;
}

/** The ended deliveries of `view`, of `group` only when given, in delivery order per group. */
export function deliveriesOf(view: MessageView, group?: string): Delivery[] {
  const deliveries: Delivery[] = [];
  for (const entry of view.groups) {
    if (group !== undefined && entry.group !== group) continue;
    for (const record of entry.history) {
      if (record.result === 'held') continue;
      deliveries.push({
        messageId: view.message.messageId,
        group: record.group,
        ...(record.instance === undefined ? {} : { instance: record.instance }),
        topic: record.topic,
        attempt: record.deliveryAttempt,
        consumer: record.consumer,
        ...(record.consumerId === undefined ? {} : { consumerId: record.consumerId }),
        deliveredAt: record.deliveredAt,
        elapsedMs: record.deliveredAt - view.message.storedAt,
        settledAt: record.settledAt,
        result: record.result,
        ...(record.reason === undefined ? {} : { reason: record.reason }),
      });
    }
  }
  return deliveries;
}

/** Delivery `attempt` of the message to `group`, ended or in flight, if it has been made. */
export function findDelivery(
  view: MessageView,
  group: string,
  attempt: number,
): Delivery | InflightDelivery | undefined {
  const ended = deliveriesOf(view, group).find((delivery) => delivery.attempt === attempt);
  if (ended) return ended;
  const current = view.groups.find((entry) => entry.group === group && entry.state === 'inflight');
  if (current?.deliveryAttempt !== attempt) return undefined;
  return {
    messageId: view.message.messageId,
    group,
    topic: view.message.topic,
    attempt,
    result: 'inflight',
  };
}

/** Where a message stands in `group`, in words, for assertion messages. */
export function describeStanding(view: MessageView | undefined, group: string, nowMs: number): string {
  if (view === undefined) return 'the broker has no message with this id (was the send awaited?)';
  const entry = view.groups.find((candidate) => candidate.group === group);
  if (entry === undefined) {
    const groups = view.groups.map((candidate) => candidate.group);
    return `group '${group}' does not read its topic '${view.message.topic}' (groups that do: ${groups.length === 0 ? 'none' : groups.join(', ')}; a new group starts at the topic's end: start the consumer before sending)`;
  }
  const ended = entry.history.filter((record) => record.result !== 'held');
  const history = ended
    .map(
      (record) =>
        `#${record.deliveryAttempt} ${record.result} at +${formatDuration(record.deliveredAt - view.message.storedAt)}`,
    )
    .join(', ');
  // A retry or a delay message waits for virtual time, which passes only when the test moves it.
  const delayed = entry.state === 'pending' && (view.message.deliverAt ?? 0) > nowMs;
  const hint = entry.state === 'waitingRetry' || delayed ? ' (advance the clock to its due time)' : '';
  const attempt = entry.deliveryAttempt === undefined ? '' : ` (attempt ${entry.deliveryAttempt})`;
  const since = formatDuration(nowMs - view.message.storedAt);
  return `at +${since} it is ${entry.state}${attempt}${hint}, after ${ended.length} ended deliveries${history === '' ? '' : `: ${history}`}`;
}
