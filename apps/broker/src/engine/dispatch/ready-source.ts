import { admitDelivery, type Clock } from '@ricochet/core';
import { matchesTagFilter, type TagFilter } from '@ricochet/protocol';
import type { DeliveryAddress, DeliveryRecord, StoredMessage } from '../../store/records.js';
import type { BrokerMetrics } from '../broker-metrics.js';
import type { EffectApplier } from '../lifecycle/effect-applier.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { ReadyRef } from '../model/ready-queue.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import type { Scheduler } from '../timers/scheduler.js';
import type { ByteAllowance } from './byte-allowance.js';
import type { DeliveryRate } from './delivery-rate.js';

/** A Ready message picked for delivery, with its current lifecycle record (none on first delivery). */
export interface ReadyCandidate {
  readonly address: DeliveryAddress;
  readonly message: StoredMessage;
  readonly record: DeliveryRecord | undefined;
}

/** Topic → parsed tag filter: what one consumer asks for. */
export type Subscriptions = ReadonlyMap<string, TagFilter>;

/** Log entries examined per call at most, so a selective filter cannot stall the event loop. */
const MAX_SCANNED_PER_CALL = 4_096;

export interface ReadySourceDeps {
  readonly records: DeliveryRecords;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly clock: Clock;
  /** Parks delay messages (T1) and FIFO messages behind their head (P5). */
  readonly applier: EffectApplier;
  /** Counts the deliveries a paused group held (DESIGN.md §11). */
  readonly metrics: BrokerMetrics;
  /** Resumed for a group whose ready queue drained: due entries held back for lack of room may come now. */
  readonly scheduler: Scheduler;
  /** X5: how many deliveries a group with a `maxDeliveriesPerSecond` may take now. */
  readonly rate: DeliveryRate;
  /**
   * The group's ready-queue limit, which due entries respect. FIFO messages parked behind their
   * head may fill half of it at most: the rest stays free for the head's own retry or lease expiry,
   * which is what unblocks them.
   */
  readonly maxReadyQueuePerGroup: number;
}

/**
 * Finds a group's Ready messages: first those Ready again (released, retried, lease expired,
 * delay due), oldest first; then new ones from each subscribed topic's log after the group's
 * cursor, round-robin across topics. Taking a message from a log advances the cursor, so every
 * message is handed out once; its lifecycle record then tracks it.
 */
export class ReadySource {
  readonly #deps: ReadySourceDeps;
  /** Per group, which topic the next log scan starts with, for fairness across topics. */
  readonly #nextTopicIndex = new WeakMap<GroupRuntime, number>();

  constructor(deps: ReadySourceDeps) {
    this.#deps = deps;
  }

  get #parkingLimit(): number {
    return Math.max(1, Math.floor(this.#deps.maxReadyQueuePerGroup / 2));
  }

  /** Whether the group has anything Ready for these subscriptions, without taking it. */
  hasReady(group: GroupRuntime, subscriptions: Subscriptions): boolean {
    if (admitDelivery(group.pause, this.#deps.clock.now()).type === 'hold') return false;
    const limit = group.config.maxDeliveriesPerSecond;
    if (limit !== undefined && this.#deps.rate.available(group, limit, 1) === 0) return false;
    if (group.readyQueue.size > 0) return true;
    for (const topic of subscriptions.keys()) {
      const runtime = this.#deps.topics.get(topic);
      if (runtime && (group.cursors.get(topic) ?? runtime.nextOffset) < runtime.nextOffset) return true;
    }
    return false;
  }

  /**
   * About how many messages are Ready for these subscriptions, at least 1 and at most `max`: those
   * Ready again, and the logs past the group's cursors, before tag filters and FIFO heads. What a
   * subscription whose credit is lent asks for (`credit-pool.ts`).
   */
  readyHint(group: GroupRuntime, subscriptions: Subscriptions, max: number): number {
    let ready = group.readyQueue.size;
    for (const topic of subscriptions.keys()) {
      if (ready >= max) break;
      const runtime = this.#deps.topics.get(topic);
      if (runtime)
        ready += Math.max(0, runtime.nextOffset - (group.cursors.get(topic) ?? runtime.nextOffset));
    }
    return Math.max(1, Math.min(max, ready));
  }

  /**
   * Take up to `max` Ready messages for the group. New messages from the logs come only while none
   * of the group's retries, lease expiries and delays is due without having fired: those are late
   * already, and a broker busy handing out new messages would make them later still. With `bytes`,
   * the take also stops before the first message that does not fit the allowance.
   */
  take(
    group: GroupRuntime,
    subscriptions: Subscriptions,
    wanted: number,
    bytes?: ByteAllowance,
  ): ReadyCandidate[] {
    // DESIGN.md §11: a paused group hands out nothing — no first delivery, and a retry that fell
    // due waits Ready in the queue (its attempt not spent) — but one probe when its breaker lets
    // it. The lifecycle driver marks the delivery it becomes as the probe.
    const admission = admitDelivery(group.pause, this.#deps.clock.now());
    if (admission.type === 'hold') {
      if (admission.untilMs !== undefined) this.#deps.applier.groupPause.wakeAt(group, admission.untilMs);
      this.#deps.metrics.deliveriesHeld(group.name, admission.reason);
      return [];
    }
    let max = admission.type === 'probe' ? Math.min(1, wanted) : wanted;
    // X5: a group with a delivery rate takes what its bucket allows; the rest waits Ready (no
    // attempt spent) and the bucket wakes the group for it. A group without one pays one read.
    const limit = group.config.maxDeliveriesPerSecond;
    if (limit !== undefined) {
      max = this.#deps.rate.available(group, limit, max);
      if (max === 0) {
        this.#deps.metrics.deliveriesHeld(group.name, 'rate');
        return [];
      }
    }
    const candidates = this.#takeReadyAgain(group, subscriptions, max, bytes);
    if (
      candidates.length < max &&
      !bytes?.full &&
      !this.#deps.scheduler.hasDue(group.name, this.#deps.clock.now())
    ) {
      this.#takeFromLogs(group, subscriptions, max, candidates, bytes);
    }
    if (limit !== undefined) this.#deps.rate.spend(group, limit, candidates.length);
    return candidates;
  }

  /** Start consuming a topic: place the cursor per the group's `startFrom`, once. */
  ensureCursor(group: GroupRuntime, topic: string): void {
    if (group.cursors.has(topic)) return;
    const runtime = this.#deps.topics.require(topic);
    group.cursors.set(
      topic,
      group.config.startFrom === 'earliest' ? runtime.retained.expiredBelow : runtime.nextOffset,
    );
    this.#deps.groups.addReader(group, topic);
    this.#deps.groups.saveCursor(group, topic);
  }

  #takeReadyAgain(
    group: GroupRuntime,
    subscriptions: Subscriptions,
    max: number,
    bytes: ByteAllowance | undefined,
  ): ReadyCandidate[] {
    const candidates: ReadyCandidate[] = [];
    const fifo = group.config.fifo;
    // Messages read to weigh them against `bytes`, so that none is read twice.
    const weighed = bytes === undefined ? undefined : new Map<ReadyRef, StoredMessage | undefined>();
    const refs: ReadyRef[] = group.readyQueue.take(max, (ref) => {
      if (!subscriptions.has(ref.topic)) return false;
      const messageGroup = fifo ? ref.messageGroup : undefined;
      // P5: only the head of its message group may go; claiming it (below) blocks the ones
      // behind it for the rest of this scan.
      if (messageGroup !== undefined && group.fifoGate.isBlocked(ref.topic, messageGroup, ref.offset))
        return false;
      if (bytes !== undefined && weighed !== undefined) {
        // A stale reference weighs nothing: it is dropped below.
        const message = this.#deps.topics.getMessage(ref.topic, ref.offset);
        if (message !== undefined && !bytes.admit(message)) return 'stop';
        weighed.set(ref, message);
      }
      if (messageGroup !== undefined) group.fifoGate.claim(ref.topic, messageGroup, ref.offset);
      return true;
    });
    if (refs.length > 0) this.#deps.scheduler.resume(group.name);
    for (const ref of refs) {
      const address = { group: group.name, topic: ref.topic, offset: ref.offset };
      const message = weighed?.get(ref) ?? this.#deps.topics.getMessage(ref.topic, ref.offset);
      const record = this.#deps.records.get(address);
      // A stale reference (the record moved on meanwhile) is dropped; the record is the truth.
      if (!message || (record && record.state.state !== 'ready')) continue;
      candidates.push({ address, message, record });
    }
    return candidates;
  }

  #takeFromLogs(
    group: GroupRuntime,
    subscriptions: Subscriptions,
    max: number,
    into: ReadyCandidate[],
    bytes: ByteAllowance | undefined,
  ): void {
    const topics = [...subscriptions.keys()];
    if (topics.length === 0) return;
    const start = (this.#nextTopicIndex.get(group) ?? 0) % topics.length;
    this.#nextTopicIndex.set(group, start + 1);
    let scanned = 0;
    for (
      let i = 0;
      i < topics.length && into.length < max && scanned < MAX_SCANNED_PER_CALL && !bytes?.full;
      i++
    ) {
      const topic = topics[(start + i) % topics.length] ?? '';
      const filter = subscriptions.get(topic);
      const runtime = this.#deps.topics.get(topic);
      const cursorBefore = group.cursors.get(topic);
      if (!filter || !runtime || cursorBefore === undefined || cursorBefore >= runtime.nextOffset) continue;
      let cursor = cursorBefore;
      const nowMs = this.#deps.clock.now();
      scan: while (into.length < max && scanned < MAX_SCANNED_PER_CALL) {
        // Read only what is still wanted: every message read is decoded, body and all. Messages
        // a filter skips make the loop read again, up to the scan limit.
        const wanted = Math.min(max - into.length, MAX_SCANNED_PER_CALL - scanned);
        const batch = this.#deps.topics.readLog(topic, cursor, wanted);
        if (batch.length === 0) break;
        for (const message of batch) {
          if (into.length >= max) break;
          scanned++;
          cursor = message.offset + 1;
          if (!matchesTagFilter(filter, message.tag)) continue;
          // After a crash the stored cursor lags behind the last write-behind window: skip what
          // that window had already settled or durably tracks; the rest starts over.
          if (this.#deps.records.takenBeforeRestart(group.name, message)) continue;
          const address = { group: group.name, topic, offset: message.offset };
          if (message.deliverAt !== undefined && message.deliverAt > nowMs) {
            this.#deps.applier.scheduleDelay(group, message);
            continue;
          }
          if (group.config.fifo && message.messageGroup !== undefined) {
            if (group.fifoGate.isBlocked(topic, message.messageGroup, message.offset)) {
              if (group.readyQueue.size >= this.#parkingLimit) {
                // No more room to park: the message stays in the log, and the cursor stops before it,
                // until the head ahead of it moves on. Parking without bound would fill the ready
                // queue until the head's retry, refused for lack of room, could never fire.
                cursor = message.offset;
                break scan;
              }
              // P5: an older message of its message group is still in flight. Park this one as Ready
              // (recorded, so a restart keeps it) until the head is committed or dead-lettered.
              this.#deps.applier.parkBehindFifoHead(group, address, message.messageId, message.messageGroup);
              continue;
            }
          }
          if (bytes !== undefined && !bytes.admit(message)) {
            // The answer is full: the message stays in the log, first in line for the next take.
            cursor = message.offset;
            break scan;
          }
          if (group.config.fifo && message.messageGroup !== undefined) {
            group.fifoGate.claim(topic, message.messageGroup, message.offset);
          }
          into.push({ address, message, record: undefined });
        }
      }
      if (cursor !== cursorBefore) {
        group.cursors.set(topic, cursor);
        // Written with the write-behind flush, together with the states of the deliveries it passed.
        this.#deps.records.cursorMoved(group, topic);
      }
    }
  }
}
