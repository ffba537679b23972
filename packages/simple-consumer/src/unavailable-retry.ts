import { abortedError } from '@ricochet/client';
import { handoverRetryDelayMs } from '@ricochet/core';
import { ERROR_CODES, RicochetError } from '@ricochet/protocol';

/**
 * `call` failed with `error`. When that is a `503 BROKER_UNAVAILABLE` (a queue between owners while
 * a spread cluster moves it), run `call` again after a short backoff (25 ms doubling to 1 s, ±20 %,
 * `handoverRetryDelayMs`), and again after each further `503`, while the next attempt can start
 * within `timeoutMs` of the first failure; then fail with the last `503`. Any other error, at any
 * attempt, is the call's own. Bounded: every wait is at least 1 ms and no attempt starts past the
 * deadline. `signal` ends a wait at once (`ABORTED`).
 *
 * The caller makes the first attempt itself and calls this from its `catch`, so a call that
 * succeeds at once (nearly every ack) pays nothing for the retry.
 */
export async function retryIfUnavailable<T>(
  error: unknown,
  call: () => Promise<T>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  what: string,
): Promise<T> {
  if (!isUnavailable(error)) throw error;
  const deadlineMs = Date.now() + timeoutMs;
  let lastError = error;
  for (let retry = 1; ; retry++) {
    const delayMs = handoverRetryDelayMs(retry, Math.random);
    if (Date.now() + delayMs >= deadlineMs) throw lastError;
    await waitUnlessAborted(delayMs, signal, what);
    try {
      return await call();
    } catch (next) {
      if (!isUnavailable(next)) throw next;
      lastError = next;
    }
  }
}

/** Whether `error` is a broker's retryable `503`: what a queue between owners is answered. */
function isUnavailable(error: unknown): boolean {
  return (
    error instanceof RicochetError && error.retryable && error.code === ERROR_CODES.BROKER_UNAVAILABLE.code
  );
}

function waitUnlessAborted(delayMs: number, signal: AbortSignal | undefined, what: string): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortedError(signal, what));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal as AbortSignal, what));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
