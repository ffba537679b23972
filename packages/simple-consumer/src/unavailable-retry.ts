import { abortedError } from '@ricochet/client';
import { handoverRetryDelayMs } from '@ricochet/core';
import { ERROR_CODES, RicochetError } from '@ricochet/protocol';

/**
 * Run `call`, and again after a short backoff (25 ms doubling to 1 s, ±20 %, `handoverRetryDelayMs`)
 * each time it fails with `503 BROKER_UNAVAILABLE` (a queue between owners while a spread cluster
 * moves it), while the next attempt can start within `timeoutMs` of now; then fail with that last
 * `503`. Any other outcome is the call's own. Bounded: every wait is at least 1 ms and no attempt
 * starts past the deadline. `signal` ends a wait at once (`ABORTED`).
 */
export async function retryWhileUnavailable<T>(
  call: () => Promise<T>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  what: string,
): Promise<T> {
  const deadlineMs = Date.now() + timeoutMs;
  for (let retry = 1; ; retry++) {
    try {
      return await call();
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      const delayMs = handoverRetryDelayMs(retry, Math.random);
      if (Date.now() + delayMs >= deadlineMs) throw error;
      await waitUnlessAborted(delayMs, signal, what);
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
