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
}

/** A lease in the heap, with its position so it can be removed from the middle. */
interface HeapEntry {
  readonly lease: PushLease;
  index: number;
}

/**
 * The deadlines of push leases (P2's consumption timeout), in memory with one timer. Unlike
 * simple-consumer leases these need not survive a restart: a push consumer's session ends with
 * the broker, and its deliveries are released (C2) or, past their deadline, timed out on start.
 * Their number is bounded by the subscriptions' credit; a settled lease leaves the heap at once
 * (an indexed heap), so memory follows what is in flight, not what was delivered lately.
 */
export class PushLeaseTable {
  readonly #clock: Clock;
  readonly #timers: TimerService;
  #onExpired: ((lease: PushLease) => void) | undefined;
  readonly #byAddress = new DeliveryMap<HeapEntry>();
  readonly #heap: HeapEntry[] = [];
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

  get size(): number {
    return this.#byAddress.size;
  }

  /** Track a lease; it replaces any older lease of the same delivery. */
  add(lease: PushLease): void {
    if (!this.#onExpired) throw new Error('start the push lease table before adding leases');
    const replaced = this.#byAddress.get(lease.address);
    if (replaced) this.#removeEntry(replaced);
    const entry: HeapEntry = { lease, index: this.#heap.length };
    this.#heap.push(entry);
    this.#byAddress.set(lease.address, entry);
    this.#siftUp(entry.index);
    this.#arm();
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
    return this.#heap
      .filter((entry) => entry.lease.subscriptionId === subscriptionId)
      .map((entry) => entry.lease);
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #removeEntry(entry: HeapEntry): void {
    this.#byAddress.delete(entry.lease.address);
    const last = this.#heap.pop();
    if (last && last !== entry) {
      this.#heap[entry.index] = last;
      last.index = entry.index;
      this.#siftDown(last.index);
      this.#siftUp(last.index);
    }
  }

  #arm(): void {
    const next = this.#heap[0];
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
    for (let next = this.#heap[0]; next && next.lease.deadlineMs <= nowMs; next = this.#heap[0]) {
      this.#removeEntry(next);
      expired.push(next.lease);
    }
    for (const lease of expired) this.#onExpired?.(lease);
    this.#arm();
  }

  #siftUp(start: number): void {
    let i = start;
    const entry = this.#heap[i];
    if (!entry) return;
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = this.#heap[parentIndex];
      if (!parent || parent.lease.deadlineMs <= entry.lease.deadlineMs) break;
      this.#heap[i] = parent;
      parent.index = i;
      i = parentIndex;
    }
    this.#heap[i] = entry;
    entry.index = i;
  }

  #siftDown(start: number): void {
    let i = start;
    const entry = this.#heap[i];
    if (!entry) return;
    const size = this.#heap.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      let smallestDeadline = entry.lease.deadlineMs;
      const leftEntry = left < size ? this.#heap[left] : undefined;
      if (leftEntry && leftEntry.lease.deadlineMs < smallestDeadline) {
        smallest = left;
        smallestDeadline = leftEntry.lease.deadlineMs;
      }
      const rightEntry = right < size ? this.#heap[right] : undefined;
      if (rightEntry && rightEntry.lease.deadlineMs < smallestDeadline) smallest = right;
      if (smallest === i) break;
      const child = this.#heap[smallest] as HeapEntry;
      this.#heap[i] = child;
      child.index = i;
      i = smallest;
    }
    this.#heap[i] = entry;
    entry.index = i;
  }
}
