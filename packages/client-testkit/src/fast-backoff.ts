/**
 * Reconnect and back off quickly and deterministically: 5, 10, 20, 40, 40 … ms, no jitter. It
 * fits `reconnectBackoff` and `retryBackoff` (core's `ExponentialBackoffOptions`).
 */
export const FAST_BACKOFF = { initialMs: 5, multiplier: 2, jitter: 0, maxMs: 40, minConnectTimeoutMs: 2_000 };
