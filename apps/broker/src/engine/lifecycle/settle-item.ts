import type { Rejection } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import { isBroadcastReceiptHandle } from './receipt-handle.js';

/** How a consumer settles a delivery: the three frames that carry receipt handles. */
export type SettleVerb = 'ack' | 'nack' | 'release';

/** One delivery to settle, as `ack`, `nack` and `release` name it. */
export interface SettleItem {
  readonly receiptHandle: string;
  /** `nack`: why processing failed. */
  readonly reason?: string;
  /** `nack`: the delay before the next delivery, instead of the group's policy. */
  readonly retryAfterMs?: number;
  /** `nack`: to the group's DLQ now, whatever attempts remain (D3). */
  readonly deadLetter?: true;
  /** `nack` with `deadLetter`: a push listener threw a non-retryable error (X1); the DLQ's cause says so. */
  readonly nonRetryable?: true;
  /** `nack` with `retryAfterMs`: a push listener postponed it, no failure counted (X4). */
  readonly postpone?: true;
}

/** One failed item of an ack/nack/release batch. */
export interface SettleFailure {
  readonly index: number;
  readonly error: BrokerError;
}

/** The outcome of settling one receipt handle. */
export type SettleOutcome = { readonly ok: true } | { readonly ok: false; readonly error: BrokerError };

/** The one answer to a handle the broker does not know, or whose message is settled already (S3). */
export function unknownReceiptHandle(): BrokerError {
  return BrokerError.of(
    'INVALID_RECEIPT_HANDLE',
    'the receipt handle is unknown or its message is already settled',
  );
}

/** The answer to a string that is not a receipt handle this broker issued. */
export function malformedReceiptHandle(): BrokerError {
  return BrokerError.of('INVALID_RECEIPT_HANDLE', 'not a receipt handle this broker issued');
}

/** Core's refusal, as the error the client receives. */
export function rejectionError(rejection: Rejection<string, string>): BrokerError {
  if (rejection.reason === 'invalidEvent') return BrokerError.of('BAD_REQUEST', rejection.message);
  return BrokerError.of(
    'INVALID_RECEIPT_HANDLE',
    `the receipt handle is no longer valid: ${rejection.message}`,
  );
}

/**
 * Settle a batch whose handles may belong to broadcast instances (B1) and to clustering groups:
 * each part goes to its own settler, and the failures come back indexed into the whole batch.
 */
export function settleSplit<TItem extends { readonly receiptHandle: string }>(
  items: readonly TItem[],
  settleBroadcast: (items: readonly TItem[]) => SettleFailure[],
  settleClustering: (items: readonly TItem[]) => SettleFailure[],
): SettleFailure[] {
  const broadcast: number[] = [];
  const clustering: number[] = [];
  for (const [index, item] of items.entries()) {
    (isBroadcastReceiptHandle(item.receiptHandle) ? broadcast : clustering).push(index);
  }
  // The common case, a batch of one kind, needs no re-indexing.
  if (broadcast.length === 0) return settleClustering(items);
  if (clustering.length === 0) return settleBroadcast(items);
  const pick = (indices: readonly number[]) => indices.map((index) => items[index] as TItem);
  const reindex = (indices: readonly number[]) => (failure: SettleFailure) => ({
    index: indices[failure.index] ?? failure.index,
    error: failure.error,
  });
  const failures = settleBroadcast(pick(broadcast)).map(reindex(broadcast));
  failures.push(...settleClustering(pick(clustering)).map(reindex(clustering)));
  return failures.sort((a, b) => a.index - b.index);
}
