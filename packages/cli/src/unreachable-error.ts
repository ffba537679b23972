import type { BrokerEndpoint } from './broker-endpoint.js';
import { CliError } from './cli-error.js';

/**
 * The error for a broker that does not answer: names the endpoint and what Node reported
 * (`ECONNREFUSED`, `ENOTFOUND`, a timeout), and says what to check.
 */
export function unreachableError(endpoint: BrokerEndpoint, error: unknown): CliError {
  return new CliError('UNAVAILABLE', `cannot reach the broker at ${endpoint.adminUrl}: ${reasonOf(error)}`, {
    hint: `is ricochet-broker running at ${endpoint.given}? Set --endpoint or RICOCHET_ENDPOINT (default http://127.0.0.1:7720)`,
    cause: error,
  });
}

function reasonOf(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return 'no answer in time';
  if (!(error instanceof Error)) return String(error);
  // fetch wraps the socket error: `TypeError: fetch failed` with the real one as its cause.
  const cause = error.cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code} (${cause.message})` : cause.message;
  }
  return error.message;
}
