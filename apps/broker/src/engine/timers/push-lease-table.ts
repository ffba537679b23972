import type { Clock } from '@ricochet/core';
import { DeliveryMap } from '../../store/delivery-map.js';
import type { DeliveryAddress } from '../../store/records.js';
import type { TimerHandle, TimerService } from './timer-service.js';

/** One push lease: which delivery, until when, and who holds it. */
export interface PushLease {
  readonly address: DeliveryAddress;
  readonly lease: number;
  readonly deadlineMs: number;
  readonly subscriptionId: number;
  /** What the delivery counts against its subscription's byte limit, when it has one (`LeaseHolder.heldBytes`). */
  readonly heldBytes?: number | undefined;
}

/** A lease in its lane; a removed one stays until its lane's head passes it or the lane compacts. */
interface LaneEntry {
  readonly lease: PushLease;
  readonly lane: Lane;
  removed: boolean;
}

/** Leases in the order of their deadlines, as they were added: a queue with lazy removal. */
interface Lane {
  entries: LaneEntry[];
  /** The first entry not yet taken off the front. */
  head: number;
  /** Entries at or after `head` that were removed. */
  removed: number;
}

/** A lane is compacted once more than half of at least this many entries were removed. */
const COMPACT_MIN_ENTRIES = 64;

/**
 * The deadlines of push leases (P2's consumption timeout), in memory with one timer. Unlike
 * simple-consumer leases these need not survive a restart: a push consumer's session ends with
 * the broker, and its deliveries are released (C2) or, past their deadline, timed out on start.
 * Their number is bounded by the subscriptions' credit.
 *
 * A lease's deadline is its delivery time plus its group's consumption timeout, so leases mostly
 * come in deadline order, and are mostly settled in it. They are kept in FIFO lanes rather than a
 * heap (which profiles showed at 3–4 % of a push stream's broker CPU, sifting on every settle):
 * a lease joins the first lane whose last deadline is not later than its own (a new lane only when
 * a group's timeout was shortened, or the clock stepped back), and a settled lease is only marked;
 * the lane drops marked entries as its head passes them, or compacts once they are more than half
 * of it, so memory follows what is in flight, not what was delivered lately.
 */
export class PushLeaseTable {
  readonly #clock: Clock;
  readonly #timers: TimerService;
  #onExpired: ((lease: PushLease) => void) | undefined;
  #onEnded: ((lease: PushLease) => void) | undefined;
  readonly #byAddress = new DeliveryMap<LaneEntry>();
  #lanes: Lane[] = [];
  #timer: TimerHandle | undefined;
  #timerDueAtMs = Number.POSITIVE_INFINITY;

  constructor(clock: Clock, timers: TimerService) {
    this.#clock = clock;
    this.#timers = timers;
  }

  /** From now on, hand every lease whose deadline passes to `listener` (once: one owner). */
  start(listener: (lease: PushLease) => void): void {
    if (this.#onExpired) throw new Error('the push lease table is started already');
    this.#onExpired = listener;
  }

  /**
   * From now on, tell `listener` of every lease that leaves the table, whichever way (settled,
   * released, replaced, expired), once each (one owner: the dispatch that keeps byte credit).
   */
  onEnded(listener: (lease: PushLease) => void): void {
    if (this.#onEnded) throw new Error('the push lease table has a listener for ended leases already');
    this.#onEnded = listener;
  }

  get size(): number {
    return this.#byAddress.size;
  }

  /** Track a lease; it replaces any older lease of the same delivery. */
  add(lease: PushLease): void {
    if (!this.#onExpired) throw new Error('start the push lease table before adding leases');
    const replaced = this.#byAddress.get(lease.address);
    if (replaced) this.#removeEntry(replaced);
    const lane = this.#laneFor(lease.deadlineMs);
    const entry: LaneEntry = { lease, lane, removed: false };
    lane.entries.push(entry);
    this.#byAddress.set(lease.address, entry);
    if (lease.deadlineMs < this.#timerDueAtMs) this.#arm();
  }

  /** Forget a delivery's lease (settled or released). */
  remove(address: DeliveryAddress): PushLease | undefined {
    const entry = this.#byAddress.get(address);
    if (!entry) return undefined;
    this.#removeEntry(entry);
    return entry.lease;
  }

  /** Every lease held through one subscription. */
  heldBy(subscriptionId: number): PushLease[] {
    const held: PushLease[] = [];
    for (const entry of this.#byAddress.values()) {
      if (entry.lease.subscriptionId === subscriptionId) held.push(entry.lease);
    }
    return held;
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** The first lane that keeps its order with `deadlineMs` at its end, or a new one. */
  #laneFor(deadlineMs: number): Lane {
    for (const lane of this.#lanes) {
      const last = lane.entries[lane.entries.length - 1];
      if (!last || last.lease.deadlineMs <= deadlineMs) return lane;
    }
    const lane: Lane = { entries: [], head: 0, removed: 0 };
    this.#lanes.push(lane);
    return lane;
  }

  #removeEntry(entry: LaneEntry): void {
    this.#byAddress.delete(entry.lease.address);
    this.#onEnded?.(entry.lease);
    entry.removed = true;
    const lane = entry.lane;
    lane.removed++;
    const waiting = lane.entries.length - lane.head;
    if (lane.removed * 2 > waiting && waiting >= COMPACT_MIN_ENTRIES) {
      lane.entries = lane.entries.slice(lane.head).filter((kept) => !kept.removed);
      lane.head = 0;
      lane.removed = 0;
    }
  }

  /** The lane's first live entry, after dropping the removed ones before it. */
  #front(lane: Lane): LaneEntry | undefined {
    for (let entry = lane.entries[lane.head]; entry; entry = lane.entries[lane.head]) {
      if (!entry.removed) return entry;
      lane.head++;
      lane.removed--;
    }
    // Empty: start over at the front of the array rather than keep what was passed.
    lane.entries = [];
    lane.head = 0;
    lane.removed = 0;
    return undefined;
  }

  /** The earliest deadline held, dropping lanes left empty (the first one stays, for reuse). */
  #earliest(): LaneEntry | undefined {
    let earliest: LaneEntry | undefined;
    this.#lanes = this.#lanes.filter((lane, index) => {
      const front = this.#front(lane);
      if (front && (!earliest || front.lease.deadlineMs < earliest.lease.deadlineMs)) earliest = front;
      return front !== undefined || index === 0;
    });
    return earliest;
  }

  #arm(): void {
    const next = this.#earliest();
    if (!next || next.lease.deadlineMs >= this.#timerDueAtMs) return;
    this.#timer?.cancel();
    this.#timerDueAtMs = next.lease.deadlineMs;
    this.#timer = this.#timers.setTimer(next.lease.deadlineMs - this.#clock.now(), () => this.#fire());
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerDueAtMs = Number.POSITIVE_INFINITY;
    const nowMs = this.#clock.now();
    const expired: PushLease[] = [];
    for (let next = this.#earliest(); next && next.lease.deadlineMs <= nowMs; next = this.#earliest()) {
      this.#removeEntry(next);
      expired.push(next.lease);
    }
    // In deadline order across lanes (each lane is in order already).
    for (const lease of expired) this.#onExpired?.(lease);
    this.#arm();
  }
}
