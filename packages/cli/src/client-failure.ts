import { RicochetError } from '@ricochet/protocol';
import type { BrokerEndpoint } from './broker-endpoint.js';
import { CliError } from './cli-error.js';
import type { ExitCodeName } from './exit-codes.js';

/**
 * Turn what a WebSocket client (producer, push consumer) threw into a {@link CliError}: the
 * broker's catalogue code picks the exit code, as an HTTP status does for the admin API.
 */
export function clientFailure(error: unknown, endpoint: BrokerEndpoint, hasToken: boolean): CliError {
  if (error instanceof CliError) return error;
  if (!(error instanceof RicochetError)) {
    return new CliError('FAILED', error instanceof Error ? error.message : String(error), { cause: error });
  }
  const exit = exitOfCode(error.code);
  const hint =
    exit === 'UNAUTHORIZED'
      ? hasToken
        ? 'the broker does not know this token: check --token / RICOCHET_TOKEN'
        : 'this broker needs a token: pass --token <token> or set RICOCHET_TOKEN'
      : exit === 'FORBIDDEN'
        ? 'the token\'s principal needs "publish" (send) or "consume" (tail) rights for this topic and group'
        : exit === 'UNAVAILABLE'
          ? `is ricochet-broker running at ${endpoint.given}? Set --endpoint or RICOCHET_ENDPOINT`
          : undefined;
  return new CliError(exit, `${error.message} (code ${error.code})`, {
    ...(hint === undefined ? {} : { hint }),
    cause: error,
  });
}

function exitOfCode(code: number | string): ExitCodeName {
  switch (code) {
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 400:
    case 409:
    case 413:
    case 530:
      return 'REJECTED';
    case 408:
    case 503:
    case 'TIMEOUT':
    case 'CONNECT_TIMEOUT':
    case 'CONNECTION_CLOSED':
    case 'ABORTED':
      return 'UNAVAILABLE';
    default:
      return 'FAILED';
  }
}
