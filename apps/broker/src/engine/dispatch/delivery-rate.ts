import { type Clock, DeliveryRateBucket } from '@ricochet/core';
import type { BrokerMetrics, DeliveryRateGauge } from '../broker-metrics.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { TimerHandle, TimerService } from '../timers/timer-service.js';

export interface DeliveryRateDeps {
  readonly clock: Clock;
  readonly timers: TimerService;
  /** Where the groups' limits and rates are read at each scrape, until {@link DeliveryRate.close}. */
  readonly metrics: BrokerMetrics;
  /**
   * This engine's share of every group's limit: 1 for a broker with one store, `1 / queues` for
   * the engine of one queue of a partitioned store, so that the queues' engines together, on one
   * broker or spread over several, deliver at most the group's limit (X5).
   * @default 1
   */
  readonly share?: number;
}

interface GroupRate {
  readonly limitPerSecond: number;
  readonly bucket: DeliveryRateBucket;
  wake: TimerHandle | undefined;
  windowStartMs: number;
  windowCount: number;
  lastRatePerSecond: number;
}

/** The shortest window the measured rate is taken over. */
const RATE_WINDOW_MS = 1_000;

/**
 * X5, a group's `maxDeliveriesPerSecond`: the engine's hand on core's {@link DeliveryRateBucket},
 * one per group with a limit. The ready source asks it how many may go before it takes messages
 * (first deliveries and retries alike, for push and simple consumers), and tells it how many
 * went. What it holds back stays Ready, its attempt not spent; when the bucket is empty it wakes
 * the group on the broker's timers as the next token arrives. Groups without a limit never reach it.
 */
export class DeliveryRate {
  readonly #deps: DeliveryRateDeps;
  readonly #share: number;
  readonly #groups = new Map<GroupRuntime, GroupRate>();
  readonly #stopGauges: () => void;
  #closed = false;

  constructor(deps: DeliveryRateDeps) {
    this.#deps = deps;
    this.#share = deps.share ?? 1;
    this.#stopGauges = deps.metrics.addDeliveryRates(() => this.gauges());
  }

  /**
   * How many of `wanted` deliveries may go to the group now, whose limit is `limitPerSecond`.
   * None: the group is woken when the next may go.
   */
  available(group: GroupRuntime, limitPerSecond: number, wanted: number): number {
    const rate = this.#rateOf(group, limitPerSecond);
    const count = rate.bucket.available(wanted);
    if (count === 0 && wanted > 0) this.#wakeLater(group, rate);
    return count;
  }

  /** `count` deliveries went to the group: spend them, and arm its wake-up when the bucket is empty. */
  spend(group: GroupRuntime, limitPerSecond: number, count: number): void {
    const rate = this.#rateOf(group, limitPerSecond);
    rate.bucket.spend(count);
    this.#measure(rate, count);
    if (rate.bucket.available(1) === 0) this.#wakeLater(group, rate);
  }

  /** Per group with a limit, its limit and measured rate. */
  *gauges(): Iterable<DeliveryRateGauge> {
    for (const [group, rate] of this.#groups) {
      if (group.config.maxDeliveriesPerSecond !== rate.limitPerSecond) continue;
      this.#measure(rate, 0);
      yield { group: group.name, limitPerSecond: rate.limitPerSecond, ratePerSecond: rate.lastRatePerSecond };
    }
  }

  /** The broker is closing: cancel every wake-up, and arm none from now on. */
  close(): void {
    this.#closed = true;
    this.#stopGauges();
    for (const rate of this.#groups.values()) rate.wake?.cancel();
    this.#groups.clear();
  }

  #rateOf(group: GroupRuntime, limitPerSecond: number): GroupRate {
    const current = this.#groups.get(group);
    if (current?.limitPerSecond === limitPerSecond) return current;
    // A new limit (or a first one) starts a full bucket.
    current?.wake?.cancel();
    const nowMs = this.#deps.clock.now();
    const rate: GroupRate = {
      limitPerSecond,
      bucket: new DeliveryRateBucket(limitPerSecond * this.#share, this.#deps.clock),
      wake: undefined,
      windowStartMs: nowMs,
      windowCount: 0,
      lastRatePerSecond: 0,
    };
    this.#groups.set(group, rate);
    return rate;
  }

  #wakeLater(group: GroupRuntime, rate: GroupRate): void {
    if (this.#closed || rate.wake) return;
    rate.wake = this.#deps.timers.setTimer(rate.bucket.nextTokenAtMs() - this.#deps.clock.now(), () => {
      rate.wake = undefined;
      group.wake();
    });
  }

  #measure(rate: GroupRate, count: number): void {
    const nowMs = this.#deps.clock.now();
    const elapsedMs = nowMs - rate.windowStartMs;
    if (elapsedMs >= RATE_WINDOW_MS) {
      rate.lastRatePerSecond = (rate.windowCount * 1_000) / elapsedMs;
      rate.windowStartMs = nowMs;
      rate.windowCount = 0;
    }
    rate.windowCount += count;
  }
}
