import type { RicochetError } from '@ricochet/protocol';

/**
 * Where a {@link Connection} stands; `state` discriminates.
 *
 * - `disconnected`: no session and no attempt running: before `connect()`, or for a moment after
 *   a session dropped (`error` says why) until the reconnect loop starts.
 * - `connecting`: the first connect attempt is running.
 * - `connected`: a session is open (the broker sent `welcome`) on `endpoint`, the entry of the
 *   `endpoint` option in use (with a list, where a failover went).
 * - `reconnecting`: waiting `delayMs` before connect attempt `attempt` (1-based), then running it;
 *   `error` says why the previous attempt or session failed.
 * - `closed`: final. `error` is set when the connection did not close on its owner's request,
 *   e.g. after a `401 UNAUTHORIZED` answer to a reconnect's `hello`.
 *
 * @see DESIGN.md §3 C1
 */
export type ConnectionStatus =
  | { readonly state: 'disconnected'; readonly error?: RicochetError }
  | { readonly state: 'connecting' }
  | { readonly state: 'connected'; readonly sessionId: string; readonly endpoint: string }
  | {
      readonly state: 'reconnecting';
      readonly attempt: number;
      readonly delayMs: number;
      readonly error?: RicochetError;
    }
  | { readonly state: 'closed'; readonly error?: RicochetError };

/** The name of a {@link ConnectionStatus}. */
export type ConnectionState = ConnectionStatus['state'];

/**
 * The most status changes kept for one slow reader; older ones are dropped first. Statuses are
 * snapshots, so a reader that falls this far behind loses history, not the current state.
 */
const MAX_BUFFERED_STATUSES = 256;

interface Watcher {
  readonly buffer: ConnectionStatus[];
  wake: (() => void) | undefined;
  done: boolean;
}

/** Fans status changes out to any number of async iterators and ends them all after `closed`. */
export class StatusFeed {
  readonly #watchers = new Set<Watcher>();
  #ended = false;

  publish(status: ConnectionStatus): void {
    if (this.#ended) return;
    if (status.state === 'closed') this.#ended = true;
    for (const watcher of this.#watchers) {
      if (watcher.buffer.length >= MAX_BUFFERED_STATUSES) watcher.buffer.shift();
      watcher.buffer.push(status);
      watcher.wake?.();
    }
  }

  /**
   * The changes published from this call on, ending after `closed` (at once when the feed has
   * ended). The watcher registers here, not on the first `next()`, so no change is lost between.
   */
  watch(): AsyncIterableIterator<ConnectionStatus> {
    const watcher: Watcher = { buffer: [], wake: undefined, done: this.#ended };
    if (!watcher.done) this.#watchers.add(watcher);
    const finish = (): void => {
      watcher.done = true;
      this.#watchers.delete(watcher);
      watcher.wake?.();
    };
    const iterator: AsyncIterableIterator<ConnectionStatus> = {
      next: async () => {
        for (;;) {
          const status = watcher.buffer.shift();
          if (status !== undefined) {
            if (status.state === 'closed') finish();
            return { done: false, value: status };
          }
          if (watcher.done) return { done: true, value: undefined };
          await new Promise<void>((resolve) => {
            watcher.wake = resolve;
          });
          watcher.wake = undefined;
        }
      },
      return: async () => {
        finish();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }
}
