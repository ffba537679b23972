import { type Clock, DEFAULT_DLQ_RETENTION_MS, DEFAULT_RETENTION_MS } from '@ricochet/core';
import { groupOfDlqTopic } from '@ricochet/protocol';
import type { BrokerStore } from '../store/broker-store.js';
import type { StoredMessage } from '../store/records.js';
import type { BrokerMetrics } from './broker-metrics.js';
import type { DeliveryRecords } from './delivery-records.js';
import type { GroupRegistry } from './group-registry.js';
import { RetainedBytes } from './retained-bytes.js';
import type { TimerHandle, TimerService } from './timer-service.js';
import type { TopicRegistry, TopicRuntime } from './topic-registry.js';

/**
 * Messages one batch examines and deletes at most. A batch is synchronous (reads, checks, queued
 * deletions); between batches the pass yields the event loop. With 1 KiB messages a batch of 128
 * takes about 1–1.5 ms on an idle core (64: 0.7 ms; 256: 1.5–3 ms), and the pass still deletes
 * tens of thousands of messages a second (`retention-disk.test.ts` prints the longest batch).
 */
const BATCH_SIZE = 128;

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

/** Why the pass stopped at a message. */
type Keep = 'notExpired' | 'held';

/**
 * Retention (DESIGN.md §5): every `intervalMs`, delete each topic's expired messages — older than
 * its `retentionMs` (a DLQ topic: its group's `dlqRetentionMs`), or beyond its `retentionBytes` —
 * with their id-index entries and history, oldest first, in small batches that yield the event
 * loop between them.
 *
 * It deletes a prefix of each log and stops at the first message it must keep: one not expired,
 * or one some group still holds (a delivery record of any state: leased, Inflight, WaitingRetry,
 * Ready again; a broadcast instance's; a delay message not yet due). So the log stays contiguous
 * from `firstOffset` to `nextOffset`, and a held message delays the deletion of those behind it
 * until it is settled. Group cursors and broadcast positions below the new first offset skip
 * ahead (counted in `ricochet_messages_expired_total{group}`), in the same turn as the deletions:
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
    let deletedMessages = 0;
    let batches = 0;
    let longestBatchMs = 0;
    // One instant for the whole pass: what expires while it runs waits for the next one, so a
    // pass ends even when messages expire as fast as it deletes them.
    const nowMs = this.#deps.clock.now();
    for (const topic of this.#deps.topics.list()) {
      for (let guard = 0; guard < 1_000_000 && !this.#stopped; guard++) {
        const startedAt = performance.now();
        const deleted = this.#batch(topic, nowMs);
        const batchMs = performance.now() - startedAt;
        if (deleted < 0) break;
        batches++;
        deletedMessages += deleted;
        longestBatchMs = Math.max(longestBatchMs, batchMs);
        this.#deps.metrics.retentionBatch(batchMs / 1_000);
        // Let everything else run before the next batch.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    return { deletedMessages, batches, longestBatchMs };
  }

  /**
   * One synchronous step on a topic: count its bytes a batch further when it has a size limit and
   * is not counted up to date, else delete up to {@link BATCH_SIZE} expired messages. Returns how
   * many it deleted (0 while counting), or -1 when the topic has nothing (more) to do.
   */
  #batch(topic: TopicRuntime, nowMs: number): number {
    const retentionBytes = topic.record.config.retentionBytes;
    const counter = retentionBytes === undefined ? undefined : this.#counterOf(topic.name);
    if (
      counter &&
      !counter.countStep(topic.firstOffset, topic.nextOffset, (from, limit) =>
        this.#deps.topics.readLog(topic.name, from, limit),
      )
    )
      return 0;
    const ageLimitMs = Math.max(this.#retentionMsOf(topic), this.#deps.dedupWindowMs);
    // The first message alone first: most passes find nothing expired and decode one message.
    const first = this.#deps.topics.readLog(topic.name, topic.firstOffset, 1);
    const candidates =
      first.length === 0 || this.#keep(topic, first[0] as StoredMessage, nowMs, ageLimitMs, counter)
        ? []
        : this.#deps.topics.readLog(topic.name, topic.firstOffset, BATCH_SIZE);
    const expired: StoredMessage[] = [];
    for (const message of candidates) {
      if (this.#keep(topic, message, nowMs, ageLimitMs, counter)) break;
      expired.push(message);
      counter?.deleted(message);
    }
    const last = expired.at(-1);
    if (!last) return -1;
    for (const message of expired) void this.#deps.store.deleteExpiredMessage(message);
    const firstOffset = last.offset + 1;
    this.#deps.topics.expireBefore(topic, firstOffset);
    this.#skipCursors(topic.name, firstOffset);
    this.#deps.metrics.retentionDeleted(topic.name, expired.length);
    return expired.length;
  }

  /** Whether the pass must keep `message`, and so every message after it, for now. */
  #keep(
    topic: TopicRuntime,
    message: StoredMessage,
    nowMs: number,
    ageLimitMs: number,
    counter: RetainedBytes | undefined,
  ): Keep | undefined {
    // A delay message's age counts from when it became due: until then a group may still need it.
    const visibleAt = Math.max(message.storedAt, message.deliverAt ?? 0);
    if (visibleAt > nowMs) return 'held';
    const tooOld = nowMs - visibleAt >= ageLimitMs;
    const tooBig =
      counter !== undefined &&
      counter.bytes > (topic.record.config.retentionBytes ?? Number.POSITIVE_INFINITY) &&
      nowMs - message.storedAt >= this.#deps.dedupWindowMs;
    if (!tooOld && !tooBig) return 'notExpired';
    if (this.#deps.sendPending(message.messageId)) return 'held';
    return this.#held(topic.name, message.offset) ? 'held' : undefined;
  }

  /** Whether any group holds the message: a delivery record for it, or a broadcast instance's. */
  #held(topic: string, offset: number): boolean {
    for (const group of this.#deps.groups.list()) {
      if (!group.cursors.has(topic)) continue;
      if (this.#deps.records.get({ group: group.name, topic, offset })) return true;
    }
    return this.#deps.broadcast.holds(topic, offset);
  }

  /** Cursors behind the new first offset skip ahead, written in this turn with the deletions. */
  #skipCursors(topic: string, firstOffset: number): void {
    for (const group of this.#deps.groups.list()) {
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

  #counterOf(topic: string): RetainedBytes {
    let counter = this.#retainedBytes.get(topic);
    if (!counter) {
      counter = new RetainedBytes();
      this.#retainedBytes.set(topic, counter);
    }
    return counter;
  }
}
