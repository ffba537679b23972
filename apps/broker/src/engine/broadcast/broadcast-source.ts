import { type Clock, initialBroadcastState } from '@ricochet/core';
import { matchesTagFilter } from '@ricochet/protocol';
import type { StoredMessage } from '../../store/records.js';
import type { Subscriptions } from '../dispatch/ready-source.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import type { TimerHandle, TimerService } from '../timers/timer-service.js';
import { type BroadcastDelivery, type BroadcastInstance, heldKey } from './broadcast-instance.js';
import type { BroadcastLedger } from './broadcast-ledger.js';

/** Log entries one take examines at most, so a selective filter cannot stall the event loop. */
const MAX_SCANNED_PER_TAKE = 4_096;

/** A message picked for an instance, with what the instance held of it (a release) if anything. */
export interface BroadcastCandidate {
  readonly message: StoredMessage;
  readonly held: BroadcastDelivery | undefined;
}

export interface BroadcastSourceDeps {
  readonly clock: Clock;
  readonly timers: TimerService;
  readonly topics: TopicRegistry;
  readonly ledger: BroadcastLedger;
  /** Delay messages of the instance fell due: it has Ready messages again. */
  readonly onReady: (instance: BroadcastInstance) => void;
}

/**
 * Finds an instance's next messages (B1): first those Ready again after a release, then new ones
 * from each subscribed topic's log after the instance's cursor, moving the cursor past each one
 * taken or filtered out. A delay message reached before its time is set aside (T1) and Ready again
 * for the instance when due, so the instance's later messages flow past it meanwhile.
 */
export class BroadcastSource {
  readonly #deps: BroadcastSourceDeps;
  #delayTimer: TimerHandle | undefined;
  #stopped = false;

  constructor(deps: BroadcastSourceDeps) {
    this.#deps = deps;
  }

  /** Up to `max` messages for the instance from the topics of `subscriptions`. */
  take(instance: BroadcastInstance, subscriptions: Subscriptions, max: number): BroadcastCandidate[] {
    const taken: BroadcastCandidate[] = [];
    for (let i = 0; i < instance.readyAgain.length && taken.length < max; ) {
      const held = instance.readyAgain[i] as BroadcastDelivery;
      const message = subscriptions.has(held.topic)
        ? this.#deps.topics.getMessage(held.topic, held.offset)
        : undefined;
      if (!message) {
        i++;
        continue;
      }
      instance.readyAgain.splice(i, 1);
      taken.push({ message, held });
    }
    let scanned = 0;
    const nowMs = this.#deps.clock.now();
    for (const [topic, filter] of subscriptions) {
      const end = this.#deps.topics.get(topic)?.nextOffset ?? 0;
      let cursor = instance.cursors.get(topic) ?? end;
      while (taken.length < max && cursor < end && scanned < MAX_SCANNED_PER_TAKE) {
        const batch = this.#deps.topics.readLog(topic, cursor, Math.min(max - taken.length, 256));
        if (batch.length === 0) break;
        for (const message of batch) {
          if (taken.length >= max) break;
          scanned++;
          cursor = message.offset + 1;
          if (!matchesTagFilter(filter, message.tag)) continue;
          // After a crash the stored position lags: skip what the lost window had consumed.
          if (this.#deps.ledger.consumedBeforeRestart(instance, message)) continue;
          if (message.deliverAt !== undefined && message.deliverAt > nowMs) {
            instance.delayed.push({ topic, offset: message.offset, deliverAt: message.deliverAt });
            this.#armDelayTimer();
            continue;
          }
          taken.push({ message, held: undefined });
        }
      }
      instance.cursors.set(topic, cursor);
    }
    return taken;
  }

  /**
   * About how many messages are Ready for the instance in these subscriptions, up to `max`: those
   * Ready again, and the logs past its cursors, before tag filters; 0 when none is. What a
   * subscription whose credit is lent asks for (`credit-pool.ts`).
   */
  readyHint(instance: BroadcastInstance, subscriptions: Subscriptions, max: number): number {
    let ready = instance.readyAgain.filter((held) => subscriptions.has(held.topic)).length;
    for (const topic of subscriptions.keys()) {
      if (ready >= max) break;
      const end = this.#deps.topics.get(topic)?.nextOffset ?? 0;
      ready += Math.max(0, end - (instance.cursors.get(topic) ?? end));
    }
    return Math.min(max, ready);
  }

  /** Stop the delay timer: the broker is closing. */
  stop(): void {
    this.#stopped = true;
    this.#delayTimer?.cancel();
    this.#delayTimer = undefined;
  }

  /** One timer for the earliest delay message set aside by any instance. */
  #armDelayTimer(): void {
    let earliestMs = Number.POSITIVE_INFINITY;
    for (const instance of this.#deps.ledger.all()) {
      for (const { deliverAt } of instance.delayed) earliestMs = Math.min(earliestMs, deliverAt);
    }
    this.#delayTimer?.cancel();
    this.#delayTimer = undefined;
    if (earliestMs === Number.POSITIVE_INFINITY || this.#stopped) return;
    this.#delayTimer = this.#deps.timers.setTimer(earliestMs - this.#deps.clock.now(), () =>
      this.#delaysDue(),
    );
  }

  /** T1: delay messages whose time came are Ready for their instance. */
  #delaysDue(): void {
    const nowMs = this.#deps.clock.now();
    for (const instance of this.#deps.ledger.all()) {
      const due = instance.delayed.filter(({ deliverAt }) => deliverAt <= nowMs);
      if (due.length === 0) continue;
      const waiting = instance.delayed.filter(({ deliverAt }) => deliverAt > nowMs);
      instance.delayed.splice(0, instance.delayed.length, ...waiting);
      for (const { topic, offset } of due) {
        const message = this.#deps.topics.getMessage(topic, offset);
        if (!message) continue;
        const held: BroadcastDelivery = {
          topic,
          offset,
          messageId: message.messageId,
          state: initialBroadcastState(),
          deliveredAt: nowMs,
        };
        instance.held.set(heldKey(topic, offset), held);
        instance.readyAgain.push(held);
      }
      this.#deps.onReady(instance);
    }
    this.#armDelayTimer();
  }
}
