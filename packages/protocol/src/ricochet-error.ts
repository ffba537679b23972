import { ERROR_CODES, type ErrorName, errorNameOf, isRetryableCode } from './error-catalogue.js';

/** Extra facts about an error, e.g. the topic that was not found. */
export type ErrorDetails = Readonly<Record<string, string | number | boolean>>;

/**
 * The base of every error Ricochet raises. `code` is what callers branch on: a catalogue code
 * from the broker (see {@link ERROR_CODES}) or, for errors raised locally by a client, a string
 * such as `'CONNECTION_CLOSED'`.
 */
export class RicochetError extends Error {
  readonly code: number | string;
  readonly retryable: boolean;
  readonly details: ErrorDetails | undefined;

  constructor(
    code: number | string,
    message: string,
    options: ErrorOptions & { retryable?: boolean; details?: ErrorDetails } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RicochetError';
    this.code = code;
    this.retryable = options.retryable ?? (typeof code === 'number' && isRetryableCode(code));
    this.details = options.details;
  }
}

/** An error the broker reported on the wire; `code` is a catalogue code. */
export class BrokerError extends RicochetError {
  declare readonly code: number;
  /** The catalogue name of `code`, or `undefined` when a newer broker sent a code we do not know. */
  readonly errorName: ErrorName | undefined;

  constructor(code: number, message: string, options: ErrorOptions & { details?: ErrorDetails } = {}) {
    super(code, message, options);
    this.name = 'BrokerError';
    this.errorName = errorNameOf(code);
  }

  /** The error an `error` frame (or a settled failure) reports, as clients raise it. */
  static fromFrame(frame: {
    readonly code: number;
    readonly message: string;
    readonly details?: ErrorDetails | undefined;
  }): BrokerError {
    return new BrokerError(
      frame.code,
      frame.message,
      frame.details === undefined ? {} : { details: frame.details },
    );
  }

  /** Build the error of a catalogue name, e.g. `BrokerError.of('NOT_FOUND', 'no topic orders')`. */
  static of(name: ErrorName, message: string, details?: ErrorDetails): BrokerError {
    return new BrokerError(ERROR_CODES[name].code, message, details === undefined ? {} : { details });
  }
}
