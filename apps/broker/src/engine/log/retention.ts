import { type Clock, DEFAULT_DLQ_RETENTION_MS, DEFAULT_RETENTION_MS } from '@ricochet/core';
import { groupOfDlqTopic } from '@ricochet/protocol';
import type { BrokerStore } from '../../store/broker-store.js';
import type { StoredMessage } from '../../store/records.js';
import type { BrokerMetrics } from '../broker-metrics.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRegistry } from '../model/group-registry.js';
import type { TopicRegistry, TopicRuntime } from '../model/topic-registry.js';
import type { TimerHandle, TimerService } from '../timers/timer-service.js';
import { RetainedBytes } from './retained-bytes.js';

/**
 * Messages one batch examines and deletes at most. A batch is synchronous (reads, checks, queued
 * deletions); between batches the pass yields the event loop. With 1 KiB messages a batch of 128
 * takes about 1–1.5 ms on an idle core (64: 0.7 ms; 256: 1.5–3 ms), and the pass still deletes
 * tens of thousands of messages a second (`retention-disk.test.ts` prints the longest batch).
 */
const BATCH_SIZE = 128;
/**
 * Topics a pass looks at between two yields of the event loop when they have nothing to delete.
 * A topic whose every message expired costs a check of two numbers, one still holding messages a
 * read of its first one (a few µs): with a hundred thousand topics, one synchronous walk held the
 * loop for a second every pass.
 */
const TOPICS_PER_TURN = 512;

/** What the broadcast dispatcher tells retention about its instances (B1). */
export interface BroadcastRetention {
  /** Whether an instance of a broadcasting group holds the message (delivered, or Ready again). */
  holds(topic: string, offset: number): boolean;
  /** Instances behind `firstOffset` skip ahead; per group, how many messages they skipped. */
  skipExpired(topic: string, firstOffset: number): ReadonlyMap<string, number>;
}

export interface RetentionDeps {
  readonly store: BrokerStore;
  readonly clock: Clock;
  readonly timers: TimerService;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly records: DeliveryRecords;
  readonly metrics: BrokerMetrics;
  readonly broadcast: BroadcastRetention;
  /** Whether a send of this id is stored but not yet committed (its index write is queued). */
  readonly sendPending: (messageId: string) => boolean;
  /** No message is deleted within the dedup window of its storing, so R3 keeps answering retried sends. */
  readonly dedupWindowMs: number;
  /**
   * The share of a topic's `retentionBytes` this store keeps: with a store split into queues, each
   * queue keeps its share of the topic's bytes (the messages spread evenly), so that the topic
   * keeps at most `retentionBytes` in all. @default 1
   */
  readonly retentionBytesShare?: number;
  /** How often a pass runs by itself. */
  readonly intervalMs: number;
  readonly onError: (error: unknown) => void;
}

/** What one pass did. */
export interface RetentionPassReport {
  readonly deletedMessages: number;
  readonly batches: number;
  /** The longest a batch held the event loop, in milliseconds. */
  readonly longestBatchMs: number;
}

/** Why the pass keeps a message: not expired yet (the scan stops), or held by a group (it survives). */
type Keep = 'notExpired' | 'held';

/**
 * Retention (DESIGN.md §5): every `intervalMs`, delete each topic's expired messages — older than
 * its `retentionMs` (a DLQ topic: its group's `dlqRetentionMs`), or beyond its `retentionBytes` —
 * with their id-index entries and history, oldest first, in small batches that yield the event
 * loop between them.
 *
 * Each topic's scan starts at its expiry frontier and stops at the first message not expired
 * (messages are stored in time order). An expired message some group still holds — a delivery
 * record of any state (leased, Inflight, WaitingRetry, Ready again, parked behind a FIFO head), a
 * broadcast instance's, a delay message not yet due — survives: it is kept and looked at again on
 * each pass, while the messages around it go, so one message stuck in a long retry never holds
 * the topic's disk. Group cursors and broadcast positions below the frontier skip up to it
 * (counted in `ricochet_messages_expired_total{group}`), in the same turn as the deletions:
 * nothing in memory or in the store refers to a deleted message.
 */
export class Retention {
  readonly #deps: RetentionDeps;
  readonly #retainedBytes = new Map<string, RetainedBytes>();
  #timer: TimerHandle | undefined;
  #running: Promise<RetentionPassReport> | undefined;
  #stopped = false;

  constructor(deps: RetentionDeps) {
    this.#deps = deps;
  }

  /** Run a pass every `intervalMs` from now on. */
  start(): void {
    this.#arm();
  }

  /** No more passes; resolves once a pass in progress has stopped at its next batch. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#running?.catch(() => undefined);
  }

  /** Run a pass now (after the one in progress, if any) and report what it did. */
  async runPass(): Promise<RetentionPassReport> {
    const previous = this.#running;
    const pass = (async () => {
      await previous?.catch(() => undefined);
      return this.#pass();
    })();
    this.#running = pass;
    try {
      return await pass;
    } finally {
      if (this.#running === pass) this.#running = undefined;
    }
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#timer = this.#deps.timers.setTimer(this.#deps.intervalMs, () => {
      // The next one is armed at once, from the timer (a virtual clock counts it as upkeep); a
      // pass still running by then (a long backlog) is not doubled.
      this.#arm();
      if (this.#running) return;
      this.runPass().catch((error: unknown) => this.#deps.onError(error));
    });
  }

  async #pass(): Promise<RetentionPassReport> {
    const report = { deletedMessages: 0, batches: 0, longestBatchMs: 0 };
    // One instant for the whole pass: what expires while it runs waits for the next one, so a
    // pass ends even when messages expire as fast as it deletes them.
    const nowMs = this.#deps.clock.now();
    let topicsThisTurn = 0;
    for (const topic of this.#deps.topics.list()) {
      if (this.#stopped) break;
      if (++topicsThisTurn >= TOPICS_PER_TURN) {
        topicsThisTurn = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      // Nothing stored from the frontier on and no survivor below it: nothing to read or delete.
      if (topic.nextOffset <= topic.retained.expiredBelow && topic.retained.survivors.length === 0) continue;
      // The survivors of earlier passes first: a lease or retry that has ended lets its message go.
      const survivors = [...topic.retained.survivors];
      for (let i = 0; i < survivors.length && !this.#stopped; i += BATCH_SIZE) {
        const slice = survivors.slice(i, i + BATCH_SIZE);
        await this.#timed(report, () => this.#recheckSurvivors(topic, slice, nowMs));
      }
      for (let guard = 0; guard < 1_000_000 && !this.#stopped; guard++) {
        if ((await this.#timed(report, () => this.#scanBatch(topic, nowMs))) < 0) break;
      }
    }
    return report;
  }

  /** Run one synchronous batch, time it, then yield the event loop. Returns what the batch returned. */
  async #timed(
    report: { deletedMessages: number; batches: number; longestBatchMs: number },
    batch: () => number,
  ): Promise<number> {
    const startedAt = performance.now();
    const result = batch();
    const batchMs = performance.now() - startedAt;
    if (result < 0) return result;
    report.batches++;
    report.deletedMessages += result;
    report.longestBatchMs = Math.max(report.longestBatchMs, batchMs);
    this.#deps.metrics.retentionBatch(batchMs / 1_000);
    // Let everything else run before the next batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    return result;
  }

  /**
   * One synchronous step of the scan from the topic's expiry frontier: count its bytes a batch
   * further when it has a size limit and is not counted up to date, else examine up to
   * {@link BATCH_SIZE} messages, delete the expired ones no group holds and keep the held ones as
   * survivors. Returns how many it deleted, or -1 when the scan has reached a message not expired.
   */
  #scanBatch(topic: TopicRuntime, nowMs: number): number {
    const counter = this.#counterOf(topic);
    const readLog = (from: number, limit: number) => this.#deps.topics.readLog(topic.name, from, limit);
    if (counter && !counter.countStep(topic.retained.firstOffset, topic.nextOffset, readLog)) return 0;
    const from = topic.retained.expiredBelow;
    // The first message alone first: most passes find nothing expired and decode one message.
    const first = readLog(from, 1)[0];
    if (!first || this.#keep(topic, first, nowMs, counter) === 'notExpired') return -1;
    const expired: StoredMessage[] = [];
    const kept: number[] = [];
    let expiredBelow = from;
    for (const message of readLog(from, BATCH_SIZE)) {
      const keep = this.#keep(topic, message, nowMs, counter);
      if (keep === 'notExpired') break;
      expiredBelow = message.offset + 1;
      if (keep === 'held') kept.push(message.offset);
      else {
        expired.push(message);
        counter?.deleted(message);
      }
    }
    for (const message of expired) void this.#deps.store.deleteExpiredMessage(message);
    this.#deps.topics.expire(topic, { expiredBelow, kept });
    this.#skipCursors(topic.name, expiredBelow);
    this.#deps.metrics.retentionDeleted(topic.name, expired.length);
    return expired.length;
  }

  /** Delete the survivors no group holds any more. Returns how many it deleted. */
  #recheckSurvivors(topic: TopicRuntime, offsets: readonly number[], nowMs: number): number {
    const counter = this.#counterOf(topic);
    const released: number[] = [];
    for (const offset of offsets) {
      const message = this.#deps.topics.getMessage(topic.name, offset);
      if (message && this.#keep(topic, message, nowMs, counter) !== undefined) continue;
      released.push(offset);
      if (!message) continue;
      counter?.deleted(message);
      void this.#deps.store.deleteExpiredMessage(message);
    }
    if (released.length > 0) this.#deps.topics.expire(topic, { released });
    this.#deps.metrics.retentionDeleted(topic.name, released.length);
    return released.length;
  }

  /**
   * Whether the pass must keep `message`: `notExpired` (by age or size; messages are stored in
   * time order, so the scan stops there), or `held` (expired, but a group still needs it: it
   * survives until a later pass).
   */
  #keep(
    topic: TopicRuntime,
    message: StoredMessage,
    nowMs: number,
    counter: RetainedBytes | undefined,
  ): Keep | undefined {
    const ageLimitMs = Math.max(this.#retentionMsOf(topic), this.#deps.dedupWindowMs);
    const ageOf = (atMs: number) => nowMs - atMs;
    const tooOld = ageOf(message.storedAt) >= ageLimitMs;
    const tooBig =
      counter !== undefined &&
      counter.bytes >
        (topic.record.config.retentionBytes ?? Number.POSITIVE_INFINITY) *
          (this.#deps.retentionBytesShare ?? 1) &&
      ageOf(message.storedAt) >= this.#deps.dedupWindowMs;
    if (!tooOld && !tooBig) return 'notExpired';
    // A delay message's age counts from when it became due: until then a group may still need it.
    const deliverAt = message.deliverAt;
    if (deliverAt !== undefined && (deliverAt > nowMs || (!tooBig && ageOf(deliverAt) < ageLimitMs)))
      return 'held';
    if (this.#deps.sendPending(message.messageId)) return 'held';
    return this.#held(topic.name, message.offset) ? 'held' : undefined;
  }

  /**
   * Whether any group holds the message: a delivery record for it, or a broadcast instance's. Only
   * the topic's readers can: a record is made by reading the topic, from a cursor on it.
   */
  #held(topic: string, offset: number): boolean {
    for (const group of this.#deps.groups.readersOf(topic)) {
      if (!group.cursors.has(topic)) continue;
      if (this.#deps.records.get({ group: group.name, topic, offset })) return true;
    }
    return this.#deps.broadcast.holds(topic, offset);
  }

  /** Cursors behind the expiry frontier skip ahead, written in this turn with the deletions. */
  #skipCursors(topic: string, firstOffset: number): void {
    for (const group of this.#deps.groups.readersOf(topic)) {
      const cursor = group.cursors.get(topic);
      if (cursor === undefined || cursor >= firstOffset) continue;
      group.cursors.set(topic, firstOffset);
      this.#deps.groups.saveCursor(group, topic);
      this.#deps.metrics.messagesExpired(group.name, firstOffset - cursor);
    }
    for (const [group, skipped] of this.#deps.broadcast.skipExpired(topic, firstOffset))
      this.#deps.metrics.messagesExpired(group, skipped);
  }

  #retentionMsOf(topic: TopicRuntime): number {
    const dlqOf = groupOfDlqTopic(topic.name);
    if (dlqOf !== undefined)
      return this.#deps.groups.get(dlqOf)?.config.dlqRetentionMs ?? DEFAULT_DLQ_RETENTION_MS;
    return topic.record.config.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  /** The topic's byte count, when it has a size limit. */
  #counterOf(topic: TopicRuntime): RetainedBytes | undefined {
    if (topic.record.config.retentionBytes === undefined) return undefined;
    let counter = this.#retainedBytes.get(topic.name);
    if (!counter) {
      counter = new RetainedBytes();
      this.#retainedBytes.set(topic.name, counter);
    }
    return counter;
  }
}
