import { type Clock, systemClock } from './clock.js';
import { type Random, systemRandom } from './random.js';
import { applyJitter } from './retry-policy.js';

/** Settings of {@link ExponentialBackoff}; every field has the seeds' default. */
export interface ExponentialBackoffOptions {
  /** The first delay, returned without jitter. @default 1000 (ms) */
  readonly initialMs?: number;
  /** Each later delay is the previous one (before jitter) times this. @default 1.6 */
  readonly multiplier?: number;
  /** Uniform spread of every delay after the first, as a fraction. @default 0.2 (±20 %) */
  readonly jitter?: number;
  /** The cap on the delay before jitter. @default 120000 (ms) */
  readonly maxMs?: number;
  /** The least time any attempt is allowed to take. @default 20000 (ms) */
  readonly minConnectTimeoutMs?: number;
  /** @default systemClock */
  readonly clock?: Clock;
  /** @default Math.random */
  readonly random?: Random;
}

/**
 * The connection-backoff algorithm of the seeds (gRPC's), shared by the producer's throttling
 * retry (rule R2) and the client's reconnect loop (rule C1):
 *
 * ```text
 * current_backoff  = INITIAL_BACKOFF
 * current_deadline = now() + INITIAL_BACKOFF
 * while (TryConnect(Max(current_deadline, now() + MIN_CONNECT_TIMEOUT)) != SUCCESS)
 *   current_backoff  = Min(current_backoff * MULTIPLIER, MAX_BACKOFF)
 *   current_deadline = now() + current_backoff + UniformRandom(-JITTER * current_backoff, JITTER * current_backoff)
 * ```
 *
 * Each call to {@link nextDelayMs} starts an attempt window and returns its length: 1 s, then
 * 1.6 s ±20 %, 2.56 s ±20 %, … capped at 120 s ±20 %. {@link attemptTimeoutMs} says how long the
 * attempt inside the current window may run. {@link reset} after a success.
 */
export class ExponentialBackoff {
  readonly #initialMs: number;
  readonly #multiplier: number;
  readonly #jitter: number;
  readonly #maxMs: number;
  readonly #minConnectTimeoutMs: number;
  readonly #clock: Clock;
  readonly #random: Random;
  /** The un-jittered backoff of the last window; `undefined` before the first window. */
  #currentBackoffMs: number | undefined;
  #deadlineMs: number | undefined;
  #attempts = 0;

  constructor(options: ExponentialBackoffOptions = {}) {
    this.#initialMs = options.initialMs ?? 1_000;
    this.#multiplier = options.multiplier ?? 1.6;
    this.#jitter = options.jitter ?? 0.2;
    this.#maxMs = options.maxMs ?? 120_000;
    this.#minConnectTimeoutMs = options.minConnectTimeoutMs ?? 20_000;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    if (!(this.#initialMs > 0 && this.#maxMs >= this.#initialMs && this.#multiplier >= 1)) {
      throw new RangeError('ExponentialBackoff needs initialMs > 0, maxMs >= initialMs and multiplier >= 1');
    }
    if (!(this.#jitter >= 0 && this.#jitter < 1 && this.#minConnectTimeoutMs >= 0)) {
      throw new RangeError('ExponentialBackoff needs 0 <= jitter < 1 and minConnectTimeoutMs >= 0');
    }
  }

  /** How many windows have been started since the last {@link reset}. */
  get attempts(): number {
    return this.#attempts;
  }

  /**
   * Start the next window and return its length in milliseconds: the time from now until the
   * following attempt may start.
   */
  nextDelayMs(): number {
    let delayMs: number;
    if (this.#currentBackoffMs === undefined) {
      // The seeds' first deadline is INITIAL_BACKOFF exactly: no jitter on the first window.
      this.#currentBackoffMs = this.#initialMs;
      delayMs = this.#initialMs;
    } else {
      this.#currentBackoffMs = Math.min(this.#currentBackoffMs * this.#multiplier, this.#maxMs);
      delayMs = Math.round(applyJitter(this.#currentBackoffMs, this.#jitter, this.#random));
    }
    this.#attempts += 1;
    this.#deadlineMs = this.#clock.now() + delayMs;
    return delayMs;
  }

  /**
   * How long the current attempt may take, measured from now: max(deadline, now +
   * MIN_CONNECT_TIMEOUT) − now. Before the first window it is MIN_CONNECT_TIMEOUT.
   */
  attemptTimeoutMs(): number {
    const nowMs = this.#clock.now();
    const deadlineMs = Math.max(this.#deadlineMs ?? nowMs, nowMs + this.#minConnectTimeoutMs);
    return deadlineMs - nowMs;
  }

  /** Forget all windows: the next {@link nextDelayMs} returns INITIAL_BACKOFF again. */
  reset(): void {
    this.#currentBackoffMs = undefined;
    this.#deadlineMs = undefined;
    this.#attempts = 0;
  }
}
