/**
 * Wait `delayMs`, or less: the promise rejects with `signal.reason` as soon as `signal` fires, and
 * the timer is cleared then, so a cancelled wait holds nothing (no timer keeps the process alive).
 */
export function cancellableDelay(delayMs: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
