import { ClientError } from './client-error.js';
import { certificateErrorCode } from './tls-options.js';

/**
 * The error of a link that could not open: `TLS_ERROR` when the broker's certificate was refused
 * (not retried: every attempt would meet the same certificate), else the retryable
 * `CONNECTION_CLOSED` saying `what` happened.
 */
export function openingFailure(address: string, what: string, error: unknown): ClientError {
  const certificateCode = certificateErrorCode(error);
  if (certificateCode !== undefined) {
    const why = error instanceof Error ? error.message : certificateCode;
    return new ClientError(
      'TLS_ERROR',
      `the TLS certificate of ${address} was refused: ${why} (${certificateCode}); trust its authority with the tls option, e.g. { tls: { ca } }`,
      { cause: error },
    );
  }
  return new ClientError('CONNECTION_CLOSED', what, error === undefined ? {} : { cause: error });
}
