/**
 * Every error the broker can put on the wire: name → numeric code, whether a client may retry
 * the same request unchanged, and what it means. Codes follow RocketMQ's reply codes. A removed
 * code is never reused. Clients branch on `code`, never on message text.
 * @see docs/protocol/errors.md (a test keeps it equal to this table)
 */
export const ERROR_CODES = {
  BAD_REQUEST: {
    code: 400,
    retryable: false,
    description:
      'The frame or a field in it is malformed: not MessagePack, a wrong type, a value out of range.',
  },
  UNAUTHORIZED: {
    code: 401,
    retryable: false,
    description: 'The handshake carried no token, or a token the broker does not accept.',
  },
  FORBIDDEN: {
    code: 403,
    retryable: false,
    description: 'The token is valid but does not allow this operation.',
  },
  NOT_FOUND: {
    code: 404,
    retryable: false,
    description: 'The topic or group named in `details` does not exist and auto-creation is off.',
  },
  REQUEST_TIMEOUT: {
    code: 408,
    retryable: true,
    description: 'The broker could not finish the request in time; it may or may not have taken effect.',
  },
  TOPIC_TYPE_MISMATCH: {
    code: 409,
    retryable: false,
    description: "The message does not fit its topic's type (e.g. no messageGroup on a fifo topic).",
  },
  INVALID_RECEIPT_HANDLE: {
    code: 410,
    retryable: false,
    description:
      'The receipt handle is unknown, replaced by a newer one, already settled, or its lease expired.',
  },
  MESSAGE_TOO_LARGE: {
    code: 413,
    retryable: false,
    description: 'The body or the properties exceed the broker’s limits.',
  },
  INTERNAL_ERROR: {
    code: 500,
    retryable: true,
    description: 'The broker failed unexpectedly; nothing was stored for the failed part of the request.',
  },
  BROKER_UNAVAILABLE: {
    code: 503,
    retryable: true,
    description: 'The broker is shutting down and takes no new work.',
  },
  TOO_MANY_REQUESTS: {
    code: 530,
    retryable: true,
    description:
      'Throttled: a backlog limit or a store watermark was passed. Retry with exponential backoff.',
  },
} as const satisfies Record<string, { code: number; retryable: boolean; description: string }>;

/** The name of a catalogued error, e.g. `'TOO_MANY_REQUESTS'`. */
export type ErrorName = keyof typeof ERROR_CODES;

/** The numeric code of a catalogued error, e.g. `530`. */
export type ErrorCode = (typeof ERROR_CODES)[ErrorName]['code'];

const NAME_BY_CODE = new Map<number, ErrorName>(
  (Object.keys(ERROR_CODES) as ErrorName[]).map((name) => [ERROR_CODES[name].code, name]),
);

/** The catalogue name of a numeric code, or `undefined` for a code this version does not know. */
export function errorNameOf(code: number): ErrorName | undefined {
  return NAME_BY_CODE.get(code);
}

/**
 * Whether a request that failed with `code` may be retried unchanged. Unknown codes (from a newer
 * broker) are not retried: retrying what we do not understand could repeat a harmful request.
 */
export function isRetryableCode(code: number): boolean {
  const name = errorNameOf(code);
  return name === undefined ? false : ERROR_CODES[name].retryable;
}
