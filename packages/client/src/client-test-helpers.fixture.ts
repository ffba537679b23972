import { RicochetError } from '@ricochet/protocol';
import { expect } from 'vitest';
import type { ConnectionStatus } from './connection-status.js';

/**
 * Test helpers the client packages share (like the fake broker, they are imported by relative
 * path from the other packages' tests and never published).
 */

/** Reconnect and back off quickly and deterministically: 5, 10, 20, 40, 40 … ms, no jitter. */
export const FAST_BACKOFF = { initialMs: 5, multiplier: 2, jitter: 0, maxMs: 40, minConnectTimeoutMs: 2_000 };

/** The error `promise` rejects with, which must be a RicochetError. */
export async function rejectionOf(promise: Promise<unknown>): Promise<RicochetError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(RicochetError);
  return error as RicochetError;
}

/** The next status of `client` in state `wanted` (or matching it), ending the feed after it. */
export function nextStatus(
  client: { status(): AsyncIterable<ConnectionStatus> },
  wanted: ConnectionStatus['state'] | ((status: ConnectionStatus) => boolean),
): Promise<ConnectionStatus> {
  const matches =
    typeof wanted === 'function' ? wanted : (status: ConnectionStatus) => status.state === wanted;
  const iterator = client.status()[Symbol.asyncIterator]();
  return (async () => {
    for (;;) {
      const result = await iterator.next();
      if (result.done) throw new Error('the status feed ended first');
      if (matches(result.value)) {
        await iterator.return?.();
        return result.value;
      }
    }
  })();
}
