import { ClientError, IdleWaiters, type ProcessSpan, type ReceivedMessage } from '@ricochet/client';
import { CONSUMPTION_TIMEOUT_REASON } from '@ricochet/core';
import {
  type ConsumeOutcome,
  type ConsumeResultValue,
  endProcessSpan,
  outcomeOfResult,
  outcomeOfThrow,
} from './consume-result.js';
import type { ClockTimer, ConsumptionClock } from './consumption-clock.js';
import { FifoQueue } from './fifo-queue.js';
import { type RunLinks, RunList } from './run-list.js';

/** What a listener gets besides the message. */
export interface ListenerContext {
  /**
   * Aborted when the consumer stops waiting for this listener: its consumption timeout passed
   * (the delivery has already been reported as failed), or `close()` gave up on it. A listener
   * doing long I/O can pass it on to stop early; its result is ignored either way.
   */
  readonly signal: AbortSignal;
}

/**
 * Processes one message. Return (or resolve with) a {@link ConsumeResultValue}; a throw or a
 * rejection counts as `FAILURE`, with the error's message as the reason (P2).
 */
export type MessageListener = (
  message: ReceivedMessage,
  context: ListenerContext,
) => ConsumeResultValue | Promise<ConsumeResultValue>;

/** What the pool needs of a cached delivery. */
export interface PoolItem {
  readonly message: ReceivedMessage;
}

/** Options of {@link ListenerPool}. */
export interface ListenerPoolOptions<TItem extends PoolItem> {
  readonly listener: MessageListener;
  /** The most listeners running at once. */
  readonly concurrency: number;
  /** How long a listener may run before its delivery is reported as failed, in ms. */
  readonly consumptionTimeoutMs: number;
  /** What times `consumptionTimeoutMs`. */
  readonly clock: ConsumptionClock;
  /** Whether a cached item may still start; a dead one is dropped without an outcome. */
  readonly isLive: (item: TItem) => boolean;
  /** Called once per started item: when its listener settles, or at its timeout if that comes first. */
  readonly onOutcome: (item: TItem, outcome: ConsumeOutcome) => void;
  /**
   * Starts the `process` span of a delivery whose listener is about to run, or returns
   * `undefined` when it is not traced; the listener runs inside the span's context.
   * @default no spans
   */
  readonly startSpan?: (message: ReceivedMessage) => ProcessSpan | undefined;
  /** Whether a thrown value dead-letters its message at once instead of failing it (X1). */
  readonly isNonRetryable: (error: unknown) => boolean;
  /** Called when a listener threw, returned something else than a result, or timed out. */
  readonly onListenerError: (error: unknown, message: ReceivedMessage) => void;
  /**
   * Called when the listeners run out of work: fewer than `concurrency` run and no cached item
   * can start (the cache is empty, or holds only messages waiting for their message group).
   */
  readonly onStarved?: () => void;
}

/** A cached item whose listener has started. */
interface Run<TItem> extends RunLinks<Run<TItem>> {
  readonly item: TItem;
  /** When the consumption timeout passes, on the clock's scale. */
  readonly deadlineMs: number;
  /** Set once the outcome went out (at the timeout or at the end); later ones are ignored. */
  reported: boolean;
  /** Created on the listener's first read of `context.signal`, so an unread signal costs nothing. */
  controller: AbortController | undefined;
  abortReason: unknown;
  /** The delivery attempt's span, ended with the outcome that goes out (or at an abandonment). */
  readonly span: ProcessSpan | undefined;
}

/** The {@link ListenerContext} of one run; the signal is made on first read. */
class RunContext implements ListenerContext {
  readonly #run: Run<PoolItem>;

  constructor(run: Run<PoolItem>) {
    this.#run = run;
  }

  get signal(): AbortSignal {
    const run = this.#run;
    run.controller ??= new AbortController();
    // Read after the abort: hand out a signal that is already aborted, with the same reason.
    if (run.abortReason !== undefined && !run.controller.signal.aborted) {
      run.controller.abort(run.abortReason);
    }
    return run.controller.signal;
  }
}

/**
 * The local cache of a push consumer and the listeners that drain it: at most `concurrency`
 * listeners run at once, in arrival order, and messages with the same `messageGroup` one at a
 * time, each after the previous one's listener has finished (P5: a FIFO group's broker holds a
 * message group's next message back while one is inflight, and the pool keeps that promise on the
 * client too; it cannot tell a FIFO group from another, so it orders every message group).
 *
 * Redeliveries (`deliveryAttempt` > 1) start before every first delivery waiting in the cache: a
 * retry was due when the broker sent it, and must not wait behind up to `maxCachedMessages`
 * messages that arrived before it (the broker, too, hands out messages Ready again before new
 * ones). Within a message group arrival order still rules: a redelivery queues behind its group's
 * earlier messages, and jumps the line only once it is its group's next message. A FIFO group's
 * redelivery is always its group's next message, since its broker holds the group's later
 * messages back until it succeeds (P5).
 *
 * A listener still running at its consumption timeout is reported as failed at once (P2), but it
 * keeps its slot and its message group until it really ends: JavaScript cannot stop it, and
 * letting more start would break both limits.
 */
export class ListenerPool<TItem extends PoolItem> {
  readonly #options: ListenerPoolOptions<TItem>;
  /** Redeliveries free to start, in order: they start before any item of `#firsts`. */
  readonly #retries = new FifoQueue<TItem>();
  /** First deliveries free to start, in order. */
  readonly #firsts = new FifoQueue<TItem>();
  /**
   * One entry per message group with an item running or free to start: the group's later items,
   * in order. Only the head of a group is ever free to start.
   */
  #groupBacklogs = new Map<string, TItem[]>();
  /** In start order, which is deadline order too: every run gets the same timeout. */
  readonly #running = new RunList<Run<TItem>>();
  /** One timer for all consumption timeouts, due no later than the oldest run's deadline. */
  #deadlineTimer: ClockTimer | undefined;
  readonly #idle = new IdleWaiters(() => this.#running.size === 0);
  #stopped = false;
  /** Set while `#pump` loops, so a listener that settles synchronously does not pump recursively. */
  #pumping = false;

  constructor(options: ListenerPoolOptions<TItem>) {
    this.#options = options;
  }

  /** Listeners running now, timed-out ones included. */
  get runningCount(): number {
    return this.#running.size;
  }

  /** Items that could start as soon as a listener is free (not those waiting for their message group). */
  get startableCount(): number {
    return this.#retries.length + this.#firsts.length;
  }

  /** Items waiting for a listener. */
  get cachedCount(): number {
    let count = this.#retries.length + this.#firsts.length;
    for (const backlog of this.#groupBacklogs.values()) count += backlog.length;
    return count;
  }

  /** Cache `items` and start listeners for as many as the limits allow. */
  add(items: readonly TItem[]): void {
    for (const item of items) this.#enqueue(item);
    this.#pump();
  }

  /** Start no more listeners; running ones go on. */
  stop(): void {
    this.#stopped = true;
  }

  /**
   * Take the cached items `predicate` selects (all by default) out of the cache and return them,
   * in order. The others keep their order and their message groups' places.
   */
  takeCached(predicate: (item: TItem) => boolean = () => true): TItem[] {
    const cached = [...this.#retries.drain(), ...this.#firsts.drain()];
    // A group's head is free to start and its backlog follows it, so this keeps each group in order.
    for (const backlog of this.#groupBacklogs.values()) cached.push(...backlog);
    this.#groupBacklogs = new Map();
    for (const run of this.#running) {
      const group = run.item.message.messageGroup;
      if (group !== undefined) this.#groupBacklogs.set(group, []);
    }
    const taken: TItem[] = [];
    for (const item of cached) {
      if (predicate(item)) taken.push(item);
      else this.#enqueue(item);
    }
    this.#pump();
    return taken;
  }

  /** Resolves once no listener runs. */
  whenIdle(): Promise<void> {
    return this.#idle.whenIdle();
  }

  /**
   * Stop waiting for the running listeners: their timers are cleared, their signals aborted with
   * `reason`, and their outcomes will be ignored.
   */
  abandonRunning(reason: unknown): void {
    for (const run of this.#running) {
      // The broker releases the delivery (C2): this attempt failed, another will come.
      if (!run.reported) run.span?.end('failure', 'consumer_closed');
      run.reported = true;
      abortRun(run, reason);
    }
    this.#running.clear();
    this.#deadlineTimer?.cancel();
    this.#deadlineTimer = undefined;
    this.#idle.check();
  }

  #enqueue(item: TItem): void {
    const group = item.message.messageGroup;
    if (group !== undefined) {
      const backlog = this.#groupBacklogs.get(group);
      if (backlog !== undefined) {
        backlog.push(item);
        return;
      }
      this.#groupBacklogs.set(group, []);
    }
    this.#makeStartable(item);
  }

  /** `item` may start as soon as a listener is free: redeliveries first. */
  #makeStartable(item: TItem): void {
    if (item.message.deliveryAttempt > 1) this.#retries.push(item);
    else this.#firsts.push(item);
  }

  #dequeue(): TItem | undefined {
    return this.#retries.shift() ?? this.#firsts.shift();
  }

  /** `item` is done with (finished or dropped): its message group's next item may start. */
  #releaseGroup(item: TItem): void {
    const group = item.message.messageGroup;
    if (group === undefined) return;
    const next = this.#groupBacklogs.get(group)?.shift();
    if (next === undefined) this.#groupBacklogs.delete(group);
    else this.#makeStartable(next);
  }

  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#stopped && this.#running.size < this.#options.concurrency) {
        const item = this.#dequeue();
        if (item === undefined) {
          this.#options.onStarved?.();
          break;
        }
        if (this.#options.isLive(item)) this.#start(item);
        else this.#releaseGroup(item);
      }
    } finally {
      this.#pumping = false;
    }
  }

  #start(item: TItem): void {
    const run: Run<TItem> = {
      item,
      deadlineMs: this.#options.clock.now() + this.#options.consumptionTimeoutMs,
      reported: false,
      controller: undefined,
      abortReason: undefined,
      span: this.#options.startSpan?.(item.message),
      previous: undefined,
      next: undefined,
      listed: false,
    };
    this.#running.add(run);
    this.#deadlineTimer ??= this.#options.clock.setTimer(this.#options.consumptionTimeoutMs, () =>
      this.#checkDeadlines(),
    );
    let returned: unknown;
    try {
      const { listener } = this.#options;
      returned =
        run.span === undefined
          ? listener(item.message, new RunContext(run))
          : run.span.run(() => listener(item.message, new RunContext(run)));
    } catch (error) {
      this.#finish(run, true, error);
      return;
    }
    if (isPromiseLike(returned)) {
      returned.then(
        (value) => this.#finish(run, false, value),
        (error: unknown) => this.#finish(run, true, error),
      );
    } else {
      this.#finish(run, false, returned);
    }
  }

  /** The listener of `run` returned `value`, or threw it; positional, so no object per message. */
  #finish(run: Run<TItem>, threw: boolean, value: unknown): void {
    // Abandoned by close(): nobody waits for this result any more.
    if (!this.#running.delete(run)) return;
    if (!run.reported) {
      run.reported = true;
      const message = run.item.message;
      if (threw) {
        this.#reportListenerError(value, message);
        const outcome = outcomeOfThrow(value, this.#options.isNonRetryable(value));
        if (run.span !== undefined)
          endProcessSpan(run.span, outcome, value instanceof Error ? value.name : 'thrown');
        this.#options.onOutcome(run.item, outcome);
      } else {
        const { outcome, problem } = outcomeOfResult(value);
        if (problem !== undefined) this.#reportListenerError(problem, message);
        if (run.span !== undefined) endProcessSpan(run.span, outcome, problem && 'invalid_result');
        this.#options.onOutcome(run.item, outcome);
      }
    }
    // After the outcome, so the results of one message group reach the broker in order.
    this.#releaseGroup(run.item);
    this.#idle.check();
    this.#pump();
  }

  /**
   * The deadline timer fired: time out every run past its deadline, then wait for the next one.
   * The timer is left alone when runs end (re-arming it per message would cost more than the rest
   * of a fast listener's bookkeeping), so it may fire with no deadline due, or nothing running.
   */
  #checkDeadlines(): void {
    this.#deadlineTimer = undefined;
    const nowMs = this.#options.clock.now();
    for (const run of this.#running) {
      if (run.deadlineMs > nowMs) {
        this.#deadlineTimer = this.#options.clock.setTimer(run.deadlineMs - nowMs, () =>
          this.#checkDeadlines(),
        );
        return;
      }
      if (!run.reported) this.#timeOut(run);
    }
  }

  /** P2: the listener ran past the consumption timeout; the delivery fails now. */
  #timeOut(run: Run<TItem>): void {
    run.reported = true;
    const error = new ClientError(
      'TIMEOUT',
      `the listener ran longer than consumptionTimeoutMs (${this.#options.consumptionTimeoutMs} ms)`,
    );
    abortRun(run, error);
    this.#reportListenerError(error, run.item.message);
    run.span?.end('failure', 'consumption_timeout', CONSUMPTION_TIMEOUT_REASON);
    this.#options.onOutcome(run.item, { type: 'nack', reason: CONSUMPTION_TIMEOUT_REASON });
  }

  #reportListenerError(error: unknown, message: ReceivedMessage): void {
    try {
      this.#options.onListenerError(error, message);
    } catch {
      // A throwing error hook must not take the delivery's outcome down with it.
    }
  }
}

function abortRun(
  run: { controller: AbortController | undefined; abortReason: unknown },
  reason: unknown,
): void {
  run.abortReason = reason;
  run.controller?.abort(reason);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
