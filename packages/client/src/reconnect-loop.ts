import type { ExponentialBackoff } from '@ricochet/core';
import type { RicochetError } from '@ricochet/protocol';
import { cancellableDelay } from './cancellable-delay.js';
import { toRicochetError } from './client-error.js';
import type { ConnectionStatus } from './connection-status.js';

/** Options of {@link ReconnectLoop}. */
export interface ReconnectLoopOptions {
  /** Paces the attempts (C1); reset once an attempt opens a session. */
  readonly backoff: ExponentialBackoff;
  /** Aborted when the connection closes: the loop stops at once, with the signal's reason. */
  readonly signal: AbortSignal;
  /** One connect attempt, which may take `timeoutMs`; it opens a session or throws why not. */
  readonly attempt: (timeoutMs: number, signal: AbortSignal) => Promise<void>;
  /** Told `connecting` before a first connect's first attempt, `reconnecting` before every other. */
  readonly onStatus: (status: ConnectionStatus) => void;
  /** A non-retryable error (such as `401`) ended the loop: the connection can never connect. */
  readonly onFatal: (error: RicochetError) => void;
}

/**
 * The connect loop of rule C1, written once: attempts until one opens a session, with the
 * backoff's wait before every attempt but a first connect's first one, so a broker that accepts
 * and at once drops connections is retried at the backoff's pace, not in a tight loop.
 *
 * It is single-flight: {@link run} while a loop runs joins it. It ends with a session, with a
 * non-retryable error (given to `onFatal`), or when `signal` aborts; it has no attempt limit of
 * its own, and every wait in it stops at once on `signal`.
 */
export class ReconnectLoop {
  readonly #options: ReconnectLoopOptions;
  /** The loop running now; `undefined` when none runs. */
  #running: Promise<void> | undefined;

  constructor(options: ReconnectLoopOptions) {
    this.#options = options;
  }

  /**
   * Connect, or join the loop already connecting.
   * @param dropError - why the last session ended; `undefined` for the first connect, whose
   *   first attempt runs at once.
   * @throws the non-retryable error that ended the loop, or the signal's reason.
   */
  run(dropError: RicochetError | undefined): Promise<void> {
    this.#running ??= this.#loop(dropError);
    return this.#running;
  }

  async #loop(dropError: RicochetError | undefined): Promise<void> {
    try {
      await this.#attempts(dropError);
    } finally {
      // Cleared as the loop ends, not a microtask later, so that a session dropping right after
      // it opened starts a new loop instead of joining this finished one.
      this.#running = undefined;
    }
  }

  async #attempts(dropError: RicochetError | undefined): Promise<void> {
    const { backoff, signal } = this.#options;
    let lastError = dropError;
    for (let attempt = 1; ; attempt += 1) {
      if (dropError !== undefined || attempt > 1) {
        const delayMs = backoff.nextDelayMs();
        this.#options.onStatus({
          state: 'reconnecting',
          attempt,
          delayMs,
          ...(lastError === undefined ? {} : { error: lastError }),
        });
        await cancellableDelay(delayMs, signal);
      } else {
        this.#options.onStatus({ state: 'connecting' });
      }
      try {
        await this.#options.attempt(backoff.attemptTimeoutMs(), signal);
        // C1: a successful handshake starts the next reconnect from the initial delay again.
        backoff.reset();
        return;
      } catch (thrown) {
        if (signal.aborted) throw signal.reason;
        const error = toRicochetError(thrown, 'the connect attempt');
        if (!error.retryable) {
          this.#options.onFatal(error);
          throw error;
        }
        lastError = error;
      }
    }
  }
}
