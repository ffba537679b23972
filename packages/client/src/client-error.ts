import { RicochetError } from '@ricochet/protocol';

/**
 * The codes of errors a client raises locally (the broker's codes are numbers, see
 * `ERROR_CODES`), each with whether the same request may be retried unchanged.
 */
export const CLIENT_ERROR_CODES = {
  /** The connection dropped before the answer came; the request may or may not have taken effect. */
  CONNECTION_CLOSED: { retryable: true },
  /** No answer within the request's time limit; the request may or may not have taken effect. */
  TIMEOUT: { retryable: true },
  /** The caller's `AbortSignal` fired. */
  ABORTED: { retryable: false },
  /** The client was closed by its owner; nothing more will be sent. */
  CLIENT_CLOSED: { retryable: false },
  /**
   * The broker broke the protocol: the wrong subprotocol or version, or a frame this client cannot
   * decode or did not expect. Retrying would meet the same broker, so it is not retryable.
   */
  PROTOCOL_ERROR: { retryable: false },
} as const satisfies Record<string, { retryable: boolean }>;

/** The code of a {@link ClientError}, e.g. `'CONNECTION_CLOSED'`. */
export type ClientErrorCode = keyof typeof CLIENT_ERROR_CODES;

/**
 * An error raised by the client itself rather than reported by the broker. Branch on `code`
 * (a {@link ClientErrorCode}) and `retryable`, never on the message.
 */
export class ClientError extends RicochetError {
  declare readonly code: ClientErrorCode;

  constructor(code: ClientErrorCode, message: string, options: ErrorOptions = {}) {
    super(code, message, { ...options, retryable: CLIENT_ERROR_CODES[code].retryable });
    this.name = 'ClientError';
  }
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
