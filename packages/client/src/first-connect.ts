import type { RicochetError } from '@ricochet/protocol';
import { ClientError } from './client-error.js';

/**
 * A client's first connect, bounded: `loop` (the reconnect loop's first run), or a rejection with
 * the error of `onTimeout` once `timeoutMs` has passed first. `onTimeout` is called once, as the
 * time runs out, and stops the loop (the connection closes with its error); `Infinity` waits for
 * ever. Reconnects after a first session never come here: they keep C1's backoff.
 */
export function withinConnectTimeout(
  loop: Promise<void>,
  timeoutMs: number,
  onTimeout: () => RicochetError,
): Promise<void> {
  if (timeoutMs === Number.POSITIVE_INFINITY) return loop;
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), timeoutMs);
    loop.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * The `CONNECT_TIMEOUT` error of a first connect that found no broker: it names the endpoints, the
 * time limit and why the last attempt failed, and says which option sets the limit.
 */
export function connectTimeoutError(
  endpoints: readonly string[],
  timeoutMs: number,
  lastError: RicochetError | undefined,
): ClientError {
  const where = endpoints.length === 1 ? endpoints[0] : `any of ${endpoints.join(', ')}`;
  const why = lastError === undefined ? '' : ` (last attempt: ${lastError.message}${causeOf(lastError)})`;
  return new ClientError(
    'CONNECT_TIMEOUT',
    `could not connect to ${where} within ${timeoutMs} ms${why}: is the broker running there? ` +
      'The connectTimeoutMs option sets this limit.',
    lastError === undefined ? {} : { cause: lastError },
  );
}

/** `: <cause>` when an error's cause says more than its message (`connect ECONNREFUSED 127.0.0.1:7720`). */
function causeOf(error: Error): string {
  const { cause } = error;
  return cause instanceof Error && cause.message !== '' && !error.message.includes(cause.message)
    ? `: ${cause.message}`
    : '';
}
