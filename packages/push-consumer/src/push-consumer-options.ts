import {
  badRequestError,
  type ClientOptions,
  checkConsumerGroup,
  checkIntegerInRange,
  checkSubscriptions,
  DEFAULT_DRAIN_TIMEOUT_MS,
  type ReceivedMessage,
} from '@ricochet/client';
import { DEFAULT_CONSUMPTION_TIMEOUT_MS as GROUP_CONSUMPTION_TIMEOUT_MS } from '@ricochet/core';
import { MAX_CONSUMPTION_TIMEOUT_MS, type RicochetError, subscribeFrameSchema } from '@ricochet/protocol';
import { type ConsumptionClock, systemConsumptionClock } from './consumption-clock.js';
import type { MessageListener } from './listener-pool.js';
import { isNonRetryable } from './non-retryable-error.js';

/** How many unsettled deliveries a consumer holds unless told otherwise: 1 024. */
export const DEFAULT_MAX_CACHED_MESSAGES = 1_024;

/**
 * How many bytes of unsettled deliveries a consumer holds unless told otherwise: 64 MiB, as
 * RocketMQ's push consumer (`maxCacheMessageSizeInBytes`).
 */
export const DEFAULT_MAX_CACHED_BYTES = 64 * 1024 * 1024;

/** How many listeners run at once unless told otherwise: 20, as in RocketMQ's clients. */
export const DEFAULT_CONCURRENCY = 20;

/**
 * How long a listener may run before its delivery fails, unless told otherwise: 15 min, the same
 * as a group's own `consumptionTimeoutMs` default (P2).
 */
export const DEFAULT_CONSUMPTION_TIMEOUT_MS = GROUP_CONSUMPTION_TIMEOUT_MS;

/** How long `close()` waits for running listeners unless told otherwise: 10 s. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/**
 * How long `close()` waits, after its `timeoutMs`, for the broker to answer the last result
 * frames, so the results of listeners that finished in time are not dropped: 5 s.
 */
export const RESULT_FLUSH_TIMEOUT_MS = DEFAULT_DRAIN_TIMEOUT_MS;

/**
 * How long a result waits for others to share its frame, in ms. Short: a result gives its credit
 * back when its frame is sent, so every millisecond here is one the broker cannot deliver in.
 */
export const RESULT_FLUSH_DELAY_MS = 1;

/**
 * The most results per `ack`, `nack` or `release` frame (the protocol allows 1 024). The broker's
 * `deliver` frames carry up to 256, so a full one is answered by one frame at once, and its
 * commit overlaps the processing of the next delivery instead of waiting for it.
 */
export const MAX_RESULTS_PER_FRAME = 256;

/** The most listeners at once: as many as `maxCachedMessages` may be, more could never run. */
const MAX_CONCURRENCY = 65_536;

/** The longest delay a timer can wait (2^31 − 1 ms, about 24.8 days). */
const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** Options of {@link PushConsumer}: the connection options every client takes, and its own. */
export interface PushConsumerOptions extends ClientOptions {
  /** The consumer group: 1–120 of `A–Z a–z 0–9 _ . -`. Required. */
  readonly group: string;
  /**
   * Topic → tag expression (`*`, or tags joined by `||`), 1 to 64 topics; a `%DLQ%<group>` topic
   * may be consumed too (D1). Every instance of a group should subscribe alike. Required.
   */
  readonly subscriptions: Readonly<Record<string, string>>;
  /**
   * Processes each delivered message and returns a `ConsumeResult`: `SUCCESS` commits it,
   * `FAILURE` or a throw fails the delivery (P2), `retryAfter(ms)` fails it with its own delay.
   * Required.
   */
  readonly listener: MessageListener;
  /**
   * The most deliveries held at once, waiting or running (the broker's credit for this consumer),
   * 1–65 536. A delivery leaves the cache once its result is sent (the broker reads the result
   * before the credit that follows it). Below this bound the consumer adapts its window: from
   * twice `concurrency`, it grows while the listeners wait for the broker and shrinks while
   * messages wait for the listeners (docs/semantics.md, P1).
   * @default 1024 (messages)
   */
  readonly maxCachedMessages?: number;
  /**
   * The most bytes of deliveries held at once, waiting or running, beside `maxCachedMessages`
   * (RocketMQ's `maxCacheMessageSizeInBytes`): the broker sends no more while this many are out,
   * but for one message larger than the whole limit, which comes alone. Counted as the broker
   * estimates a delivery's size: its body, properties and keys, and about 2 KiB for the rest.
   * At least 1; a broker older than this option ignores it. @default 67108864 (bytes, 64 MiB)
   */
  readonly maxCachedBytes?: number;
  /**
   * The most listeners running at once, 1–65 536. Messages with the same `messageGroup` (the
   * FIFO key) run one at a time, in order, whatever this is (P5). @default 20 (listeners)
   */
  readonly concurrency?: number;
  /**
   * Take each queue's deliveries from its owner (DESIGN.md §9, docs/protocol/README.md#owned-subscriptions):
   * the consumer asks for the queue map and the `ownedSubscriptions` and `creditLending` features;
   * a broker that serves a spread store grants them, and the consumer then subscribes on every
   * queue owner, each delivering from the queues it owns, the listeners shared. Its
   * `maxCachedMessages` is one pool lent to the owners that ask for it, retries first
   * (docs/protocol/README.md#credit-lending); an owner that does not grant `creditLending` keeps a
   * static share, and `maxCachedBytes` is split over the subscriptions.
   * With `false`, on a broker of one store, or one that grants neither, the `endpoint` broker
   * delivers from every queue, forwarding from their owners.
   * @default true
   */
  readonly routeToOwners?: boolean;
  /**
   * How long a listener may run, 1 ms – 24 h: a listener still running after it has its delivery
   * failed with the reason `consumption timeout` (P2), though it is not stopped (its
   * `context.signal` is aborted). The broker enforces the group's own `consumptionTimeoutMs` as
   * well; keep this one no longer than that. @default 900000 (ms, 15 min)
   */
  readonly consumptionTimeoutMs?: number;
  /**
   * What times `consumptionTimeoutMs`, and nothing else: a test passes its virtual clock here
   * (`@ricochet/testing`'s `broker.clock`) so the timeout passes when the test moves that clock.
   * @default the process's clock (`performance.now()` and `setTimeout`)
   */
  readonly clock?: ConsumptionClock;
  /**
   * How long `close()` waits for running listeners when it is not given `timeoutMs`, 0 – 2^31 − 1.
   * Listeners still running after it are left behind: their deliveries are released by the broker
   * when the connection closes (C2), so their messages are delivered again. @default 10000 (ms)
   * @deprecated Use `close({ timeoutMs })`, as every client's `close()` takes it.
   */
  readonly closeTimeoutMs?: number;
  /**
   * Which thrown errors no retry can cure, besides a `NonRetryableError` (always): the listener's
   * message goes to the group's DLQ at once, whatever attempts remain, with the error's message as
   * its reason (X1). A predicate that throws counts as `false`.
   * @default undefined (only `NonRetryableError`)
   * @example nonRetryable: (error) => error instanceof SyntaxError || error instanceof ValidationError
   */
  readonly nonRetryable?: (error: unknown) => boolean;
  /**
   * Called when a delivery fails because of its listener: it threw or rejected (`error` as
   * thrown), returned something that is not a `ConsumeResult` (a `ClientError` `400`), or ran
   * past `consumptionTimeoutMs` (a `ClientError` `TIMEOUT`). The delivery is failed either way.
   * @default console.warn
   */
  readonly onListenerError?: (error: unknown, message: ReceivedMessage) => void;
  /**
   * Called with problems the consumer deals with by itself and carries on after: a result the
   * broker refused (a `BrokerError`, usually `410 INVALID_RECEIPT_HANDLE` when the group's
   * consumption timeout had already failed the delivery; `details.messageId` names it), a result
   * frame that failed as a whole, a failed subscribe after a reconnect, an `error` frame without `id`.
   * @default console.warn
   */
  readonly onError?: (error: RicochetError) => void;
}

/** The options the consumer runs with, checked and with their defaults filled in. */
export interface ResolvedPushConsumerOptions {
  readonly group: string;
  readonly subscriptions: Readonly<Record<string, string>>;
  readonly listener: MessageListener;
  readonly maxCachedMessages: number;
  readonly maxCachedBytes: number;
  readonly concurrency: number;
  readonly routeToOwners: boolean;
  readonly consumptionTimeoutMs: number;
  readonly clock: ConsumptionClock;
  readonly closeTimeoutMs: number;
  /** X1: a `NonRetryableError`, or an error the `nonRetryable` option accepts. */
  readonly isNonRetryable: (error: unknown) => boolean;
  readonly onListenerError: (error: unknown, message: ReceivedMessage) => void;
  readonly onError: (error: RicochetError) => void;
}

/**
 * Check `options` and fill in the defaults; the connection's own options are checked by it.
 * @throws ClientError `400` naming the first invalid option.
 */
export function resolvePushConsumerOptions(options: PushConsumerOptions): ResolvedPushConsumerOptions {
  checkConsumerGroup(options.group);
  const subscriptions = checkSubscriptions(options.subscriptions);
  if (typeof options.listener !== 'function') throw badRequestError('listener must be a function');
  if (options.nonRetryable !== undefined && typeof options.nonRetryable !== 'function')
    throw badRequestError('nonRetryable must be a function');
  const resolved: ResolvedPushConsumerOptions = {
    group: options.group,
    subscriptions,
    listener: options.listener,
    maxCachedMessages: options.maxCachedMessages ?? DEFAULT_MAX_CACHED_MESSAGES,
    maxCachedBytes: options.maxCachedBytes ?? DEFAULT_MAX_CACHED_BYTES,
    concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
    routeToOwners: options.routeToOwners ?? true,
    consumptionTimeoutMs: options.consumptionTimeoutMs ?? DEFAULT_CONSUMPTION_TIMEOUT_MS,
    clock: options.clock ?? systemConsumptionClock,
    closeTimeoutMs: options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS,
    isNonRetryable: (error) => isNonRetryable(error, options.nonRetryable),
    onListenerError:
      options.onListenerError ??
      ((error, message) => console.warn(`the listener failed on message ${message.messageId}:`, error)),
    onError: options.onError ?? ((error) => console.warn(error)),
  };
  // At least 1, though `subscribe` may carry 0 (a lent subscription's first loan): a consumer
  // that may hold no message would never run one.
  checkIntegerInRange(
    resolved.maxCachedMessages,
    1,
    subscribeFrameSchema.shape.maxCachedMessages.maxValue ?? Number.MAX_SAFE_INTEGER,
    'maxCachedMessages',
  );
  checkIntegerInRange(resolved.maxCachedBytes, 1, Number.MAX_SAFE_INTEGER, 'maxCachedBytes');
  checkIntegerInRange(resolved.concurrency, 1, MAX_CONCURRENCY, 'concurrency');
  checkIntegerInRange(resolved.consumptionTimeoutMs, 1, MAX_CONSUMPTION_TIMEOUT_MS, 'consumptionTimeoutMs');
  checkCloseTimeoutMs(resolved.closeTimeoutMs, 'closeTimeoutMs');
  return resolved;
}

/**
 * Check how long `close()` may wait for running listeners: 0 – 2^31 − 1 ms.
 * @throws ClientError `400` naming `name`.
 */
export function checkCloseTimeoutMs(value: number, name: string): void {
  checkIntegerInRange(value, 0, MAX_TIMER_DELAY_MS, name);
}
