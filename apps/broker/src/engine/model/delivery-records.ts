import type { BrokerStore } from '../../store/broker-store.js';
import { DeliveryMap } from '../../store/delivery-map.js';
import type { DeliveryAddress, DeliveryRecord, StoredMessage } from '../../store/records.js';
import type { Scheduler } from '../timers/scheduler.js';
import { soon, type TimerHandle, type TimerService } from '../timers/timer-service.js';
import { DurableRecordCache } from './durable-record-cache.js';
import type { GroupRegistry, GroupRuntime } from './group-registry.js';
import type { RestartHorizon } from './restart-horizon.js';

/** How long a delivery state may live in memory only before it is written. */
export const WRITE_BEHIND_MS = 100;
/**
 * Records a write-behind flush writes per turn of the event loop (about half a millisecond of
 * work): a flush of thousands, under a fast push stream, must not stall the loop for milliseconds.
 */
export const FLUSH_CHUNK_RECORDS = 256;

/**
 * `now`: the state must be on disk with this turn's commit (a failure's WaitingRetry and its
 * schedule entry, a simple consumer's lease). `deferred`: it may wait for the next write-behind
 * flush, because a crash before it costs at most a redelivery.
 */
export type Durability = 'now' | 'deferred';

/** A write-behind flush under way: the entries it took, how far it got, the cursors it ends with. */
interface FlushInProgress {
  readonly pending: readonly Buffered[];
  next: number;
  readonly cursors: readonly CursorAtFlush[];
  continuation: TimerHandle;
}

/** A group's cursor on a topic as it stood when a flush began: what that flush stores. */
interface CursorAtFlush {
  readonly group: GroupRuntime;
  readonly topic: string;
  readonly nextOffset: number;
}

interface Buffered {
  readonly address: DeliveryAddress;
  record: DeliveryRecord;
  /** Whether the store held a record for this address when buffering began. */
  readonly storeHadRecord: boolean;
}

/**
 * The lifecycle records of deliveries, with write-behind for the states a crash may lose.
 *
 * Most deliveries are settled within milliseconds. A push delivery's Inflight state (and a Ready
 * state after a release or a due retry), and a simple consumer's new lease with the schedule entry
 * of its deadline (the scheduler's deferred entries, written by {@link flush} too), wait in memory
 * for up to {@link WRITE_BEHIND_MS}; a message committed meanwhile never touches the disk but for
 * its history entry. The group cursors that
 * pass such messages are written by the same flush, in the same transaction, so the store never
 * holds a cursor past a delivery it knows nothing of: after a crash, the log scan starts over from
 * the stored cursor. Nor can a flush name a message the store lacks: every message's write was
 * queued before any consumer could see it (TopicRegistry.append), so it commits first. There {@link takenBeforeRestart} tells the messages already tracked (a durable
 * WaitingRetry, a simple lease) or already settled (committed, dead-lettered) from those whose
 * delivery was lost with the window and starts over (at-least-once).
 */
export class DeliveryRecords {
  readonly #store: BrokerStore;
  readonly #groups: GroupRegistry;
  readonly #timers: TimerService;
  /** Its deferred entries (a simple lease's deadline) are written by {@link flush}, with the records. */
  readonly #scheduler: Scheduler;
  readonly #buffered = new DeliveryMap<Buffered>();
  /** The records last written at once, as written: read back without a store read. */
  readonly #written = new DurableRecordCache();
  readonly #dirtyCursors = new Map<string, { readonly group: GroupRuntime; readonly topic: string }>();
  readonly #restartHorizon: RestartHorizon;
  /**
   * Deliveries settled (Commit or DLQ) by this process at offsets stored before it started that
   * the group's log scan has still to reach: recovered at start, and settled before the scan came
   * to them. {@link takenBeforeRestart} must not take one for new while its history entry is still
   * on its way to the store (reads see committed data only): it would be delivered, and committed,
   * twice. At most one entry per delivery recovered at start; each goes when the scan passes it.
   */
  readonly #settledAhead = new DeliveryMap<true>();
  #timer: TimerHandle | undefined;
  /** A flush under way, a chunk per turn: what it has left to write. */
  #flushing: FlushInProgress | undefined;

  /** `restartHorizon`: the topic registry's (filled when it loads, before anything is delivered). */
  constructor(
    store: BrokerStore,
    groups: GroupRegistry,
    timers: TimerService,
    scheduler: Scheduler,
    restartHorizon: RestartHorizon,
  ) {
    this.#store = store;
    this.#groups = groups;
    this.#timers = timers;
    this.#scheduler = scheduler;
    this.#restartHorizon = restartHorizon;
  }

  /**
   * Whether the log scan of `group` reached a message that a past life of the broker had already
   * taken: its cursor was stored behind it. Messages stored since this process started cannot be,
   * so the scan's hot path pays nothing; older ones cost a record read and a history read, once.
   */
  takenBeforeRestart(group: string, message: StoredMessage): boolean {
    if (!this.#restartHorizon.covers(message)) return false;
    const { topic, offset } = message;
    const address = { group, topic, offset };
    if (this.#settledAhead.get(address)) {
      // The scan passes an offset once: the mark has done its work.
      this.#settledAhead.delete(address);
      return true;
    }
    if (this.get(address)) return true;
    const runtime = this.#groups.get(group);
    // A success the group keeps no history of, marked with its stored cursor.
    if (runtime && this.#groups.isMarkedSucceeded(runtime, topic, offset)) return true;
    return this.#store
      .readHistory(message.messageId)
      .some(
        (entry) =>
          entry.group === group &&
          entry.instance === undefined &&
          entry.topic === topic &&
          entry.offset === offset &&
          (entry.result === 'committed' || entry.result === 'deadLettered'),
      );
  }

  get(address: DeliveryAddress): DeliveryRecord | undefined {
    return (
      this.#buffered.get(address)?.record ?? this.#written.get(address) ?? this.#store.getDelivery(address)
    );
  }

  put(address: DeliveryAddress, record: DeliveryRecord, durability: Durability): void {
    if (durability === 'now') {
      this.#buffered.delete(address);
      this.#written.set(address, record);
      // A failed transaction leaves the store without it: reads must go back to what the store has.
      this.#store.putDelivery(address, record).then(undefined, () => this.#written.forget(address, record));
      return;
    }
    const buffered = this.#buffered.get(address);
    if (buffered) buffered.record = record;
    else
      this.#buffered.set(address, {
        address,
        record,
        storeHadRecord: this.#written.has(address) || this.#store.hasDelivery(address),
      });
    // The state buffered now is the newest; the one written before it must not outlive the buffer.
    this.#written.delete(address);
    this.#arm();
  }

  /**
   * The first state of a delivery that has no record yet (the caller found none): deferred, and
   * without the store read {@link put} makes to learn whether a stored record must be deleted later.
   */
  putNew(address: DeliveryAddress, record: DeliveryRecord): void {
    this.#buffered.set(address, { address, record, storeHadRecord: false });
    this.#arm();
  }

  /** The message reached Commit or DLQ: its record goes, from memory or from the store. */
  delete(address: DeliveryAddress): void {
    const buffered = this.#buffered.get(address);
    if (buffered) this.#buffered.delete(address);
    this.#written.delete(address);
    if (!buffered || buffered.storeHadRecord) void this.#store.deleteDelivery(address);
    // A delivery recovered at start and settled before the group's log scan (its cursor stored
    // behind it) comes back to its offset: the history entry saying so may not be committed yet.
    if (this.#restartHorizon.covers(address)) {
      const cursor = this.#groups.get(address.group)?.cursors.get(address.topic);
      if (cursor === undefined || cursor <= address.offset) this.#settledAhead.set(address, true);
    }
  }

  /** The group's cursor on `topic` moved: write it with the next flush. */
  cursorMoved(group: GroupRuntime, topic: string): void {
    this.#dirtyCursors.set(`${group.name}\u0000${topic}`, { group, topic });
    this.#arm();
  }

  /**
   * Write every buffered state, deferred schedule entry and moved cursor now, in one transaction
   * (at close, and in tests). The write-behind timer flushes a chunk at a time instead.
   */
  flush(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#flushing?.continuation.cancel();
    const cursors = this.#flushing?.cursors ?? [];
    this.#flushing = undefined;
    this.#scheduler.writeDeferred();
    for (const { address, record } of this.#buffered.values()) void this.#store.putDelivery(address, record);
    this.#buffered.clear();
    for (const { group, topic, nextOffset } of cursors) this.#groups.saveCursor(group, topic, nextOffset);
    for (const { group, topic } of this.#dirtyCursors.values()) this.#groups.saveCursor(group, topic);
    this.#dirtyCursors.clear();
  }

  #arm(): void {
    this.#timer ??= this.#timers.setTimer(WRITE_BEHIND_MS, () => this.#startFlush());
  }

  /**
   * A write-behind flush, spread over turns: what is buffered now is written {@link
   * FLUSH_CHUNK_RECORDS} at a time, each in its current state (one settled meanwhile is not
   * written at all), and the moved cursors, as they stand now, with the last chunk. A cursor thus
   * never commits before the states of the deliveries it passed; a state buffered after this
   * moment waits for the next flush, and no cursor written by this one passed its message for the
   * first time. The deferred schedule entries go first: one whose record is not written yet fires
   * from memory, and after a crash it is only a stale entry.
   */
  #startFlush(): void {
    this.#timer = undefined;
    if (this.#flushing) {
      // The one under way ends first; what came since waits for the next.
      this.#arm();
      return;
    }
    this.#scheduler.writeDeferred();
    const pending = [...this.#buffered.values()];
    const cursors: CursorAtFlush[] = [];
    for (const { group, topic } of this.#dirtyCursors.values()) {
      const nextOffset = group.cursors.get(topic);
      if (nextOffset !== undefined) cursors.push({ group, topic, nextOffset });
    }
    this.#dirtyCursors.clear();
    this.#flushing = { pending, next: 0, cursors, continuation: { cancel: () => {} } };
    this.#flushChunk();
  }

  #flushChunk(): void {
    const flushing = this.#flushing;
    if (!flushing) return;
    const end = Math.min(flushing.pending.length, flushing.next + FLUSH_CHUNK_RECORDS);
    for (let i = flushing.next; i < end; i++) {
      const entry = flushing.pending[i] as Buffered;
      // Still buffered as this very entry: written in its current state, and no longer buffered.
      if (this.#buffered.get(entry.address) !== entry) continue;
      this.#buffered.delete(entry.address);
      void this.#store.putDelivery(entry.address, entry.record);
    }
    flushing.next = end;
    if (end < flushing.pending.length) {
      flushing.continuation = soon(this.#timers, () => this.#flushChunk());
      return;
    }
    for (const { group, topic, nextOffset } of flushing.cursors)
      this.#groups.saveCursor(group, topic, nextOffset);
    this.#flushing = undefined;
    // What was buffered or moved since this flush started waits for the next one.
    if (this.#buffered.size > 0 || this.#dirtyCursors.size > 0) this.#arm();
  }
}
