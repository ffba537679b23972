import { ERROR_CODES, type ErrorDetails, RicochetError } from '@ricochet/protocol';

/**
 * The codes of errors a client raises locally (the broker's codes are numbers, see
 * `ERROR_CODES`), each with whether the same request may be retried unchanged.
 */
export const CLIENT_ERROR_CODES = {
  /** The connection dropped before the answer came; the request may or may not have taken effect. */
  CONNECTION_CLOSED: { retryable: true },
  /** No answer within the request's time limit; the request may or may not have taken effect. */
  TIMEOUT: { retryable: true },
  /**
   * The first connect found no broker within `connectTimeoutMs`: `start()` fails and the client
   * closes. Retryable: a new client may find the broker once it runs.
   */
  CONNECT_TIMEOUT: { retryable: true },
  /** The caller's `AbortSignal` fired. */
  ABORTED: { retryable: false },
  /** The client was closed by its owner; nothing more will be sent. */
  CLIENT_CLOSED: { retryable: false },
  /**
   * The broker broke the protocol: the wrong subprotocol or version, or a frame this client cannot
   * decode or did not expect. Retrying would meet the same broker, so it is not retryable.
   */
  PROTOCOL_ERROR: { retryable: false },
  /**
   * The client refused the broker's TLS certificate (an unknown authority, a name that does not
   * match, an expired certificate). Retrying would meet the same certificate, so it is not retryable.
   */
  TLS_ERROR: { retryable: false },
} as const satisfies Record<string, { retryable: boolean }>;

/** The code of a {@link ClientError}, e.g. `'CONNECTION_CLOSED'`. */
export type ClientErrorCode = keyof typeof CLIENT_ERROR_CODES;

/**
 * The broker's catalogue codes a client raises itself, for what it checks before any I/O (an
 * option, an argument, a message): `400 BAD_REQUEST` and `413 MESSAGE_TOO_LARGE`. They are the codes
 * the broker would answer the same request with, so a caller branches on one code whoever refused;
 * neither is retryable.
 */
export type LocalCheckCode =
  | (typeof ERROR_CODES)['BAD_REQUEST']['code']
  | (typeof ERROR_CODES)['MESSAGE_TOO_LARGE']['code'];

/**
 * An error raised by the client itself rather than reported by the broker. Branch on `code`
 * (a {@link ClientErrorCode}, or a {@link LocalCheckCode} for what was refused before any I/O) and
 * `retryable`, never on the message.
 */
export class ClientError extends RicochetError {
  declare readonly code: ClientErrorCode | LocalCheckCode;

  constructor(
    code: ClientErrorCode | LocalCheckCode,
    message: string,
    options: ErrorOptions & { readonly details?: ErrorDetails } = {},
  ) {
    // A catalogue code takes its retryable flag from the catalogue, as RicochetError does.
    super(
      code,
      message,
      typeof code === 'number' ? options : { ...options, retryable: CLIENT_ERROR_CODES[code].retryable },
    );
    this.name = 'ClientError';
  }
}

/**
 * The `400 BAD_REQUEST` {@link ClientError} for an option, an argument or a message the client
 * refuses before any I/O; `message` names what is wrong with it.
 */
export function badRequestError(message: string, options: ErrorOptions = {}): ClientError {
  return new ClientError(ERROR_CODES.BAD_REQUEST.code, message, options);
}

/**
 * Any thrown value as a {@link RicochetError}: Ricochet's own errors pass through; anything else
 * means the exchange broke off (`CONNECTION_CLOSED`, retryable), e.g. `what` = `'the send'`.
 */
export function toRicochetError(thrown: unknown, what: string): RicochetError {
  if (thrown instanceof RicochetError) return thrown;
  return new ClientError('CONNECTION_CLOSED', `${what} failed`, { cause: thrown });
}

/** `promise`, or a rejection with `ABORTED` (naming `what`) as soon as `signal` fires. */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(abortedError(signal, what));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(abortedError(signal, what));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The {@link ClientError} for a fired `AbortSignal`, keeping the signal's reason as the cause. */
export function abortedError(signal: AbortSignal, what: string): ClientError {
  return new ClientError('ABORTED', `${what} was aborted`, { cause: signal.reason });
}
