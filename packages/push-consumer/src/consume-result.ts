import { badRequestError, type ClientError, type ProcessSpan } from '@ricochet/client';
import { assertNever, MAX_RETRY_DELAY_MS } from '@ricochet/core';

/** The longest delay {@link ConsumeResult.retryAfter} accepts: 24 h, the protocol's `retryAfterMs` bound. */
export const MAX_RETRY_AFTER_MS = MAX_RETRY_DELAY_MS;

/** The most characters of a failure reason the broker keeps (the `nack` frame's limit). */
export const MAX_FAILURE_REASON_LENGTH = 1_024;

/**
 * What a push listener returns for a message; `type` discriminates. Build one with
 * {@link ConsumeResult}: `SUCCESS` commits the message, `FAILURE` fails this delivery (it is
 * retried after the group's retry delay, P3, or dead-lettered after `maxRetries`, P4), and
 * `retryAfter(ms)` fails it with a delay of its own for this one retry, and `deadLetter(reason?)`
 * moves it to the group's DLQ at once, whatever attempts remain (D3).
 *
 * @see DESIGN.md §3 P2–P4, D3, §4
 */
export type ConsumeResultValue =
  | { readonly type: 'success' }
  | { readonly type: 'failure' }
  | { readonly type: 'retryAfter'; readonly retryAfterMs: number }
  | { readonly type: 'postpone'; readonly postponeMs: number }
  | { readonly type: 'deadLetter'; readonly reason?: string };

/**
 * The results a push listener may return, as RocketMQ's `ConsumeResult` has them. A listener that
 * throws (or rejects) counts as `FAILURE`, with the error's message as the failure reason.
 *
 * @example
 * listener: async (message) => {
 *   if (!(await paymentService.isUp())) return ConsumeResult.retryAfter(5_000);
 *   await charge(JSON.parse(message.text()));
 *   return ConsumeResult.SUCCESS;
 * }
 */
export const ConsumeResult = {
  /** The message was processed: commit it. */
  SUCCESS: Object.freeze({ type: 'success' } as const),
  /** Processing failed: retry the message after the group's retry delay (P3), or dead-letter it (P4). */
  FAILURE: Object.freeze({ type: 'failure' } as const),
  /**
   * Processing failed: retry the message after `retryAfterMs` instead of the group's retry delay,
   * for this retry only. The failure still counts toward the group's `maxRetries` (P4).
   *
   * @param retryAfterMs - an integer from 0 to 86 400 000 (24 h), counted from the failure.
   * @throws ClientError `400` when `retryAfterMs` is out of range or not an integer; thrown
   *   inside a listener, that makes the delivery a `FAILURE` with this error as its reason.
   */
  retryAfter(retryAfterMs: number): ConsumeResultValue {
    const problem = retryAfterProblem(retryAfterMs);
    if (problem !== undefined) throw badRequestError(problem);
    return Object.freeze({ type: 'retryAfter', retryAfterMs });
  },
  /**
   * The listener cannot take the message now (its downstream is rate-limited, a dependency asks it
   * to wait): it comes back after `postponeMs` without counting an attempt toward `maxRetries`, and
   * with the same `deliveryAttempt` (X4). Bounded: postponements count toward the group's
   * `maxRetryDurationMs` when it has one, and otherwise stop after its `maxPostponeMs` (1 h by
   * default) from the first, after which a postponement is a failure like any other. A broker that
   * predates the rule takes it as `retryAfter(postponeMs)`.
   *
   * @param postponeMs - an integer from 0 to 86 400 000 (24 h).
   * @throws ClientError `400` when `postponeMs` is out of range or not an integer.
   */
  postpone(postponeMs: number): ConsumeResultValue {
    const problem = retryAfterProblem(postponeMs, 'postponeMs');
    if (problem !== undefined) throw badRequestError(problem);
    return Object.freeze({ type: 'postpone', postponeMs });
  },
  /**
   * The message can never be processed (a poison message): move it to the group's DLQ
   * (`%DLQ%<group>`) now, whatever attempts remain, with `reason` in its history and DLQ record
   * (D3, RocketMQ's delay level −1). The delivery counts as a failed attempt.
   *
   * @param reason - why, at most 1 024 characters (longer ones are cut). @default 'dead-lettered by the consumer'
   */
  deadLetter(reason?: string): ConsumeResultValue {
    return Object.freeze(reason === undefined ? { type: 'deadLetter' } : { type: 'deadLetter', reason });
  },
} as const;

/** How a delivery is settled on the wire: `ack`, `nack` with its reason and delay, or dead-lettered now. */
export type ConsumeOutcome =
  | { readonly type: 'ack' }
  | {
      readonly type: 'nack';
      readonly reason: string;
      readonly retryAfterMs?: number;
      /** With `retryAfterMs`: a postponement, no failure (X4). */
      readonly postpone?: true;
    }
  | { readonly type: 'deadLetter'; readonly reason?: string; readonly nonRetryable?: true };

/** What {@link outcomeOfResult} returns: the outcome, and the problem when the value is not a result. */
export interface ResultOutcome {
  readonly outcome: ConsumeOutcome;
  readonly problem?: ClientError;
}

// The two outcomes nearly every message ends with, made once: frozen, so they can be shared.
const ACKED: ResultOutcome = Object.freeze({ outcome: Object.freeze({ type: 'ack' }) });
const FAILED: ResultOutcome = Object.freeze({
  outcome: Object.freeze({ type: 'nack', reason: 'the listener returned FAILURE' }),
});

/** The outcome of a value a listener returned, and the problem with it when it is not a result. */
export function outcomeOfResult(value: unknown): ResultOutcome {
  if (typeof value === 'object' && value !== null && 'type' in value) {
    const result = value as { readonly type: unknown; readonly retryAfterMs?: unknown };
    switch (result.type) {
      case 'success':
        return ACKED;
      case 'failure':
        return FAILED;
      case 'retryAfter': {
        const problem = retryAfterProblem(result.retryAfterMs);
        if (problem === undefined) {
          const retryAfterMs = result.retryAfterMs as number;
          return {
            outcome: {
              type: 'nack',
              reason: `the listener asked for a retry after ${retryAfterMs} ms`,
              retryAfterMs,
            },
          };
        }
        // A hand-made result with a bad delay: still a failure, with the group's own delay.
        return invalidResult(`the listener returned retryAfter with an invalid delay: ${problem}`);
      }
      case 'postpone': {
        const { postponeMs } = value as { readonly postponeMs?: unknown };
        const problem = retryAfterProblem(postponeMs, 'postponeMs');
        if (problem !== undefined)
          return invalidResult(`the listener returned postpone with an invalid delay: ${problem}`);
        const ms = postponeMs as number;
        return {
          outcome: {
            type: 'nack',
            reason: `the listener postponed it for ${ms} ms`,
            retryAfterMs: ms,
            postpone: true,
          },
        };
      }
      case 'deadLetter': {
        const { reason } = value as { readonly reason?: unknown };
        if (reason === undefined) return { outcome: { type: 'deadLetter' } };
        if (typeof reason === 'string')
          return { outcome: { type: 'deadLetter', reason: truncateReason(reason) } };
        return invalidResult(`the listener returned deadLetter with a reason that is ${describe(reason)}`);
      }
    }
  }
  return invalidResult(`the listener returned ${describe(value)}, not a ConsumeResult`);
}

/**
 * The outcome of a listener that threw or rejected with `error`: a failure (P2), or, when the
 * error is non-retryable, the DLQ at once with its message as the reason (X1).
 */
export function outcomeOfThrow(error: unknown, nonRetryable: boolean): ConsumeOutcome {
  const reason = truncateReason(reasonOf(error));
  return nonRetryable ? { type: 'deadLetter', reason, nonRetryable } : { type: 'nack', reason };
}

/**
 * End the `process` span of a delivery with its outcome: `ack` a success, `deadLetter` dead-lettered,
 * a `nack` with a delay of its own a retry after, any other `nack` a failure, whose `error.type` is
 * `failureType` when given (the thrown error's name, `invalid_result`), else `failure`.
 */
export function endProcessSpan(span: ProcessSpan, outcome: ConsumeOutcome, failureType?: string): void {
  switch (outcome.type) {
    case 'ack':
      span.end('success');
      return;
    case 'deadLetter':
      span.end('dead_lettered', 'dead_lettered', outcome.reason);
      return;
    case 'nack':
      if (outcome.retryAfterMs !== undefined) span.end('retry_after', 'retry_after', outcome.reason);
      else span.end('failure', failureType ?? 'failure', outcome.reason);
      return;
    default:
      assertNever(outcome);
  }
}

/**
 * `reason` cut to {@link MAX_FAILURE_REASON_LENGTH} characters, ending in `…` when cut, and never
 * in half of a surrogate pair.
 */
export function truncateReason(reason: string): string {
  if (reason.length <= MAX_FAILURE_REASON_LENGTH) return reason;
  let end = MAX_FAILURE_REASON_LENGTH - 1;
  const last = reason.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${reason.slice(0, end)}…`;
}

function retryAfterProblem(retryAfterMs: unknown, name = 'retryAfterMs'): string | undefined {
  if (typeof retryAfterMs === 'number' && Number.isInteger(retryAfterMs)) {
    if (retryAfterMs >= 0 && retryAfterMs <= MAX_RETRY_AFTER_MS) return undefined;
  }
  return `${name} must be an integer from 0 to ${MAX_RETRY_AFTER_MS}, got ${String(retryAfterMs)}`;
}

function invalidResult(message: string): ResultOutcome {
  const problem = badRequestError(message);
  return { outcome: { type: 'nack', reason: truncateReason(message) }, problem };
}

function reasonOf(error: unknown): string {
  if (error instanceof Error) return error.message === '' ? error.name : error.message;
  if (typeof error === 'string' && error !== '') return error;
  return `the listener threw ${describe(error)}`;
}

function describe(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (typeof value === 'string') return `the string '${value.slice(0, 64)}'`;
  if (typeof value === 'object') {
    const type = (value as { readonly type?: unknown }).type;
    return typeof type === 'string' ? `an object of type '${type.slice(0, 64)}'` : 'an object';
  }
  return `${typeof value} ${String(value)}`;
}
