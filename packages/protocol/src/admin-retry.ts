import { type Clock, handoverRetryDelayMs, type Random, systemClock, systemRandom } from '@ricochet/core';

/**
 * How a client of the admin HTTP API (the CLI, the testing kit) treats a `503`: a broker of a
 * spread cluster answers it for a queue between owners once its own wait for the owner is spent
 * (a hung owner whose lease still runs), and a draining broker answers it too. Retrying a request
 * is safe only when making it twice changes nothing more than making it once.
 */

/** The bounds of {@link retryUnavailable}: a few attempts within a few seconds. */
export interface AdminRetryBounds {
  /** Attempts in all, the first included. @default 4 */
  readonly maxAttempts: number;
  /** No retry starts later than this after the first answer, in ms. @default 5000 (ms) */
  readonly budgetMs: number;
  /** The wait before the first retry, before jitter, in ms; doubling after each. @default 250 (ms) */
  readonly initialDelayMs: number;
  /** The cap on one wait before jitter, in ms. @default 2000 (ms) */
  readonly maxDelayMs: number;
}

/** The defaults of {@link AdminRetryBounds}: waits of 250, 500 and 1000 ms (±20 %), within 5 s. */
export const DEFAULT_ADMIN_RETRY: AdminRetryBounds = Object.freeze({
  maxAttempts: 4,
  budgetMs: 5_000,
  initialDelayMs: 250,
  maxDelayMs: 2_000,
});

/** What {@link retryUnavailable} reads of one answer: its HTTP status and `Retry-After` header. */
export interface AdminAttemptAnswer {
  readonly status: number;
  /** The `Retry-After` header as sent (seconds, or an HTTP date), if any. */
  readonly retryAfter: string | undefined;
}

/** Options of {@link retryUnavailable}. */
export interface AdminRetryOptions {
  /** @default DEFAULT_ADMIN_RETRY */
  readonly bounds?: AdminRetryBounds;
  /**
   * Waits `delayMs` before a retry, on the caller's timers: no default, as this package holds no
   * timers (its code runs in browsers and brokers alike).
   */
  readonly sleep: (delayMs: number) => Promise<void>;
  /** Where the budget and an HTTP-date `Retry-After` are read from. @default systemClock */
  readonly clock?: Clock;
  /** The jitter's randomness. @default Math.random */
  readonly random?: Random;
}

/** The POST routes that set a state, so that a repeat changes nothing more: pause and resume. */
const IDEMPOTENT_POST = /^\/v1\/groups\/[^/]+\/(pause|resume)$/;

/**
 * Whether the admin request `METHOD path` may be made again after a `503`: reads (`GET`, `HEAD`),
 * the writes that replace a whole config (`PUT` of a topic or group) and pause/resume (a state
 * set, not toggled). Not a redrive (`POST …/dlq/redrive`): a `503` may come after some queues took
 * it, and a repeat would pace those entries a second time.
 */
export function isIdempotentAdminRequest(request: string): boolean {
  const [method = '', target = ''] = request.split(' ', 2);
  const path = target.split('?', 1)[0] ?? '';
  if (method === 'GET' || method === 'HEAD' || method === 'PUT') return true;
  return method === 'POST' && IDEMPOTENT_POST.test(path);
}

/**
 * The wait a `Retry-After` header asks for, in ms from `nowMs`: delay-seconds or an HTTP date;
 * `undefined` for a missing or unreadable header.
 */
export function retryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  const value = header?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1_000;
  const dateMs = Date.parse(value);
  return Number.isNaN(dateMs) ? undefined : Math.max(0, dateMs - nowMs);
}

/**
 * Make an admin request with `attempt`, and again while the broker answers `503` and the request
 * is idempotent ({@link isIdempotentAdminRequest}): after 250 ms, 500, 1000 (doubling, ±20 %
 * jitter, `handoverRetryDelayMs`), or after what `Retry-After` asks if that is longer, within
 * `maxAttempts` and `budgetMs`. A `Retry-After` that points past the budget ends the retries:
 * the broker asked for more time than the caller has. Resolves with the last answer, whatever
 * its status; an attempt that rejects (the network) rejects at once, unretried.
 *
 * @param request - `METHOD path`, e.g. `PUT /v1/groups/orders`.
 */
export async function retryUnavailable<T extends AdminAttemptAnswer>(
  request: string,
  attempt: () => Promise<T>,
  options: AdminRetryOptions,
): Promise<T> {
  const bounds = options.bounds ?? DEFAULT_ADMIN_RETRY;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const retryable = isIdempotentAdminRequest(request);
  const startedAtMs = clock.now();
  let answer = await attempt();
  for (let tries = 1; answer.status === 503 && retryable && tries < bounds.maxAttempts; tries++) {
    const backoffMs = handoverRetryDelayMs(tries, random, {
      initialMs: bounds.initialDelayMs,
      maxMs: bounds.maxDelayMs,
    });
    const delayMs = Math.max(backoffMs, retryAfterMs(answer.retryAfter, clock.now()) ?? 0);
    if (clock.now() + delayMs - startedAtMs > bounds.budgetMs) break;
    await options.sleep(delayMs);
    answer = await attempt();
  }
  return answer;
}
