import type { Rejection } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';

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
