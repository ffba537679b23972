import type { HistoryRecord } from '../records.js';

/**
 * A history entry as layout 1 stores it: the record without its lease (which is in the key), its
 * fields in the order the golden test pins. Written out field by field, not by a rest spread: it
 * runs for every settled delivery.
 */
export function storedHistoryOf(record: HistoryRecord): HistoryRecord {
  const stored = { group: record.group } as { -readonly [K in keyof HistoryRecord]: HistoryRecord[K] };
  if (record.instance !== undefined) stored.instance = record.instance;
  stored.topic = record.topic;
  stored.offset = record.offset;
  stored.deliveryAttempt = record.deliveryAttempt;
  stored.consumer = record.consumer;
  if (record.consumerId !== undefined) stored.consumerId = record.consumerId;
  stored.deliveredAt = record.deliveredAt;
  stored.settledAt = record.settledAt;
  stored.result = record.result;
  if (record.reason !== undefined) stored.reason = record.reason;
  if (record.principal !== undefined) stored.principal = record.principal;
  // X6: only on the delivery that moved the message to the DLQ; entries written before it had none.
  if (record.cause !== undefined) stored.cause = record.cause;
  return stored;
}
