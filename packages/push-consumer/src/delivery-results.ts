import { type ReceivedMessage, receiptHandleOf, toRicochetError } from '@ricochet/client';
import { assertNever } from '@ricochet/core';
import { BrokerError, type RicochetError } from '@ricochet/protocol';
import type { ConsumeOutcome } from './consume-result.js';
import type { Subscription } from './push-consumer-lifecycle.js';
import type { BatchOutcome, PendingResult } from './result-batcher.js';

/** A delivered message in the cache or in a listener. */
export interface Delivery {
  readonly message: ReceivedMessage;
  readonly subscription: Subscription;
}

/** A delivery's result, waiting in the batcher. */
export interface ResultEntry extends PendingResult {
  readonly messageId: string;
  /** The session whose receipt handle this is; on any other the result is dropped (C2). */
  readonly sessionId: string;
  /** The subscription that gets a credit back once the result is sent; none for stray deliveries. */
  readonly creditTo: Subscription | undefined;
}

/** The result that settles `delivery` as its listener's `outcome` says, crediting its subscription. */
export function resultOf(delivery: Delivery, outcome: ConsumeOutcome): ResultEntry {
  const { message, subscription } = delivery;
  const receiptHandle = receiptHandleOf(message);
  const { messageId } = message;
  const { sessionId } = subscription;
  switch (outcome.type) {
    case 'ack':
      return { action: 'ack', receiptHandle, messageId, sessionId, creditTo: subscription };
    case 'deadLetter': {
      const { reason, nonRetryable } = outcome;
      const base = {
        action: 'nack',
        receiptHandle,
        deadLetter: true,
        messageId,
        sessionId,
        creditTo: subscription,
        ...(nonRetryable === undefined ? {} : { nonRetryable }),
      } as const;
      return reason === undefined ? base : { ...base, reason };
    }
    case 'nack': {
      const { reason, retryAfterMs, postpone } = outcome;
      return retryAfterMs === undefined
        ? { action: 'nack', receiptHandle, reason, messageId, sessionId, creditTo: subscription }
        : {
            action: 'nack',
            receiptHandle,
            reason,
            retryAfterMs,
            ...(postpone === undefined ? {} : { postpone }),
            messageId,
            sessionId,
            creditTo: subscription,
          };
    }
    default:
      return assertNever(outcome, 'consume outcome');
  }
}

/**
 * The `release` of a delivery nobody will process (C2): Ready again for the group, no failure
 * counted, and no credit back, since it was not delivered under a live subscription of ours.
 */
export function releaseOf(receiptHandle: string, messageId: string, sessionId: string): ResultEntry {
  return { action: 'release', receiptHandle, messageId, sessionId, creditTo: undefined };
}

/**
 * What to report about a sent batch: each result the broker refused (usually `410`, its lease
 * already gone), or the error of a frame that failed as a whole. A dropped or closed connection
 * is not one: the broker released those deliveries (C2), nothing is lost.
 */
export function problemsOf(results: readonly ResultEntry[], outcome: BatchOutcome): RicochetError[] {
  if ('failures' in outcome) {
    return outcome.failures.map((failure) => {
      const result = results[failure.index];
      const messageId = result?.messageId ?? 'unknown';
      return new BrokerError(
        failure.code,
        `the broker refused the ${result?.action ?? 'result'} of message ${messageId}: ${failure.message}`,
        { details: { messageId } },
      );
    });
  }
  const error = toRicochetError(outcome.error, 'the request');
  return error.code === 'CONNECTION_CLOSED' || error.code === 'CLIENT_CLOSED' ? [] : [error];
}
