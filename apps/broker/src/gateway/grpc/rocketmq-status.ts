import { BrokerError, ERROR_CODES } from '@ricochet/protocol';
import type { RocketCode, RocketStatus } from './rocketmq-schema.js';

export const OK_STATUS: RocketStatus = { code: 'OK', message: 'OK' };

/**
 * A RocketMQ status for a Ricochet error: the code from the catalogue, mapped to the one the
 * official clients branch on. Two mappings matter for behaviour: `TOO_MANY_REQUESTS` (R4) is the
 * only code on which a RocketMQ producer backs off before resending, and `BROKER_UNAVAILABLE`
 * maps to `HA_NOT_AVAILABLE`, which a producer resends at once, as it would to the proxy.
 */
export function rocketStatusOf(error: unknown): RocketStatus {
  if (!(error instanceof BrokerError)) {
    return { code: 'INTERNAL_ERROR', message: 'the broker failed to handle the request' };
  }
  return statusOfPayload(error);
}

/** An error as a send receipt or a settle failure carries it: code, message and details. */
export interface ErrorLike {
  readonly code: number;
  readonly message: string;
  readonly details?: Readonly<Record<string, string | number | boolean>> | undefined;
}

/** The RocketMQ status of an error payload (a failed send receipt, a failed settle). */
export function statusOfPayload(error: ErrorLike): RocketStatus {
  return { code: rocketCodeOf(error), message: error.message };
}

function rocketCodeOf(error: ErrorLike): RocketCode {
  switch (error.code) {
    case ERROR_CODES.BAD_REQUEST.code:
      return 'BAD_REQUEST';
    case ERROR_CODES.UNAUTHORIZED.code:
      return 'UNAUTHORIZED';
    case ERROR_CODES.FORBIDDEN.code:
      return 'FORBIDDEN';
    case ERROR_CODES.NOT_FOUND.code:
      // The catalogue's 404 names what is missing in its details (DESIGN §6).
      if (error.details?.topic !== undefined) return 'TOPIC_NOT_FOUND';
      if (error.details?.group !== undefined) return 'CONSUMER_GROUP_NOT_FOUND';
      return 'NOT_FOUND';
    case ERROR_CODES.REQUEST_TIMEOUT.code:
      return 'REQUEST_TIMEOUT';
    case ERROR_CODES.TOPIC_TYPE_MISMATCH.code:
      return 'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE';
    case ERROR_CODES.INVALID_RECEIPT_HANDLE.code:
      return 'INVALID_RECEIPT_HANDLE';
    case ERROR_CODES.MESSAGE_TOO_LARGE.code:
      return 'MESSAGE_BODY_TOO_LARGE';
    case ERROR_CODES.BROKER_UNAVAILABLE.code:
      return 'HA_NOT_AVAILABLE';
    case ERROR_CODES.TOO_MANY_REQUESTS.code:
      return 'TOO_MANY_REQUESTS';
    default:
      return 'INTERNAL_ERROR';
  }
}

/** A status of `code` saying `message`. */
export function status(code: RocketStatus['code'], message: string): RocketStatus {
  return { code, message };
}

/**
 * One status for a batch: OK when every entry is, the entries' own when they all agree, and
 * MULTIPLE_RESULTS otherwise (the proxy's rule; the clients then read each entry).
 */
export function overallStatus(statuses: readonly RocketStatus[]): RocketStatus {
  const [first] = statuses;
  if (first === undefined) return OK_STATUS;
  if (statuses.every((entry) => entry.code === first.code)) return first;
  return status('MULTIPLE_RESULTS', 'the entries have different results');
}
