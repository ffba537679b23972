import type { BrokerStore } from '../store/broker-store.js';
import { DeliveryMap } from '../store/delivery-map.js';
import type { DeliveryAddress, DeliveryRecord, StoredMessage } from '../store/records.js';
import type { GroupRegistry, GroupRuntime } from './group-registry.js';
import { RestartHorizon } from './restart-horizon.js';
import type { Scheduler } from './scheduler.js';
import type { TimerHandle, TimerService } from './timer-service.js';

/** How long a delivery state may live in memory only before it is written. */
export const WRITE_BEHIND_MS = 100;

/**
 * `now`: the state must be on disk with this turn's commit (a failure's WaitingRetry and its
 * schedule entry, a simple consumer's lease). `deferred`: it may wait for the next write-behind
 * flush, because a crash before it costs at most a redelivery.
 */
export type Durability = 'now' | 'deferred';

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
  readonly #dirtyCursors = new Map<string, { readonly group: GroupRuntime; readonly topic: string }>();
  readonly #restartHorizon: RestartHorizon;
  #timer: TimerHandle | undefined;

  constructor(store: BrokerStore, groups: GroupRegistry, timers: TimerService, scheduler: Scheduler) {
    this.#store = store;
    this.#groups = groups;
    this.#timers = timers;
    this.#scheduler = scheduler;
    this.#restartHorizon = new RestartHorizon(store);
  }

  /**
   * Whether the log scan of `group` reached a message that a past life of the broker had already
   * taken: its cursor was stored behind it. Messages stored since this process started cannot be,
   * so the scan's hot path pays nothing; older ones cost a record read and a history read, once.
   */
  takenBeforeRestart(group: string, message: StoredMessage): boolean {
    if (!this.#restartHorizon.covers(message)) return false;
    const { topic, offset } = message;
    if (this.get({ group, topic, offset })) return true;
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
    return this.#buffered.get(address)?.record ?? this.#store.getDelivery(address);
  }

  put(address: DeliveryAddress, record: DeliveryRecord, durability: Durability): void {
    if (durability === 'now') {
      this.#buffered.delete(address);
      void this.#store.putDelivery(address, record);
      return;
    }
    const buffered = this.#buffered.get(address);
    if (buffered) buffered.record = record;
    else
      this.#buffered.set(address, {
        address,
        record,
        storeHadRecord: this.#store.getDelivery(address) !== undefined,
      });
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
    if (!buffered || buffered.storeHadRecord) void this.#store.deleteDelivery(address);
  }

  /** The group's cursor on `topic` moved: write it with the next flush. */
  cursorMoved(group: GroupRuntime, topic: string): void {
    this.#dirtyCursors.set(`${group.name}\u0000${topic}`, { group, topic });
    this.#arm();
  }

  /** Write every buffered state, deferred schedule entry and moved cursor now, in one transaction. */
  flush(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    for (const { address, record } of this.#buffered.values()) void this.#store.putDelivery(address, record);
    this.#buffered.clear();
    this.#scheduler.writeDeferred();
    for (const { group, topic } of this.#dirtyCursors.values()) this.#groups.saveCursor(group, topic);
    this.#dirtyCursors.clear();
  }

  #arm(): void {
    this.#timer ??= this.#timers.setTimer(WRITE_BEHIND_MS, () => this.flush());
  }
}
