import type { DeliveryRecord } from '../records.js';
import type { AllFields } from './field-table.js';
import {
  fromStoredPushState,
  fromStoredSimpleState,
  type StoredPushStateV1,
  type StoredSimpleStateV1,
  toStoredPushState,
  toStoredSimpleState,
} from './stored-delivery-state.js';

/** A schedule key as layout 1 stores it inside a delivery record. */
export type StoredScheduleKeyV1 = readonly [group: string, dueAtMs: number, topic: string, offset: number];

/** What a stored delivery record carries besides its state (layout 1). */
interface StoredDeliveryFactsV1 {
  readonly messageId: string;
  readonly scheduleKey?: StoredScheduleKeyV1;
  readonly consumerId?: string;
  readonly deliveredAt?: number;
}

/**
 * A value of the `deliveries` database in layout 1: one message's lifecycle state for one group,
 * with `consumer` naming the machine that drives it. Its fields are the store's own, not core's,
 * so that core's types can change without changing the bytes on disk.
 */
export type StoredDeliveryV1 =
  | ({ readonly consumer: 'push'; readonly state: StoredPushStateV1 } & StoredDeliveryFactsV1)
  | ({ readonly consumer: 'simple'; readonly state: StoredSimpleStateV1 } & StoredDeliveryFactsV1);

/** The fields of the engine's delivery record the mappers below copy; compiles only while that is all of them. */
export const MAPPED_DELIVERY_FIELDS = {
  consumer: true,
  state: true,
  messageId: true,
  scheduleKey: true,
  consumerId: true,
  deliveredAt: true,
} as const satisfies AllFields<DeliveryRecord>;

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The engine's delivery record as layout 1 stores it, fields in the order the broker has always
 * written them. Absent optional fields stay absent: an `undefined` would be encoded and change the
 * bytes.
 */
export function toStoredDelivery(record: DeliveryRecord): StoredDeliveryV1 {
  const stored: Writable<StoredDeliveryV1> =
    record.consumer === 'push'
      ? { consumer: 'push', state: toStoredPushState(record.state), messageId: record.messageId }
      : { consumer: 'simple', state: toStoredSimpleState(record.state), messageId: record.messageId };
  if (record.scheduleKey !== undefined) stored.scheduleKey = record.scheduleKey;
  if (record.consumerId !== undefined) stored.consumerId = record.consumerId;
  if (record.deliveredAt !== undefined) stored.deliveredAt = record.deliveredAt;
  return stored;
}

/** A stored delivery record as the engine's. */
export function fromStoredDelivery(stored: StoredDeliveryV1): DeliveryRecord {
  const record: Writable<DeliveryRecord> =
    stored.consumer === 'push'
      ? { consumer: 'push', state: fromStoredPushState(stored.state), messageId: stored.messageId }
      : { consumer: 'simple', state: fromStoredSimpleState(stored.state), messageId: stored.messageId };
  if (stored.scheduleKey !== undefined) record.scheduleKey = stored.scheduleKey;
  if (stored.consumerId !== undefined) record.consumerId = stored.consumerId;
  if (stored.deliveredAt !== undefined) record.deliveredAt = stored.deliveredAt;
  return record;
}
