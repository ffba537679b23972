import type { Clock } from '@ricochet/core';
import type { DeliveryAddress } from '../store/records.js';
import type { TimerHandle, TimerService } from './timer-service.js';

/** One push lease: which delivery, until when, and who holds it. */
export interface PushLease {
  readonly address: DeliveryAddress;
  readonly lease: number;
  readonly deadlineMs: number;
  readonly subscriptionId: number;
}

/**
 * The deadlines of push leases (P2's consumption timeout), in memory with one timer. Unlike
 * simple-consumer leases these need not survive a restart: a push consumer's session ends with
 * the broker, and its deliveries are released (C2) or, past their deadline, timed out on start.
 * Their number is bounded by the subscriptions' credit.
 */
export class PushLeaseTable {
  readonly #clock: Clock;
  readonly #timers: TimerService;
  readonly #onExpired: (lease: PushLease) => void;
  /** Leases by delivery key; the current lease of a delivery replaces any older one. */
  readonly #leases = new Map<string, PushLease>();
  /** Min-heap of leases by deadline; entries whose lease was settled are skipped when popped. */
  readonly #heap: PushLease[] = [];
  #timer: TimerHandle | undefined;
  #timerDueAtMs = Number.POSITIVE_INFINITY;

  constructor(clock: Clock, timers: TimerService, onExpired: (lease: PushLease) => void) {
    this.#clock = clock;
    this.#timers = timers;
    this.#onExpired = onExpired;
  }

  get size(): number {
    return this.#leases.size;
  }

  add(lease: PushLease): void {
    this.#leases.set(keyOf(lease.address), lease);
    heapPush(this.#heap, lease);
    this.#arm();
  }

  /** Forget a lease (settled or released). */
  remove(address: DeliveryAddress): PushLease | undefined {
    const key = keyOf(address);
    const lease = this.#leases.get(key);
    this.#leases.delete(key);
    return lease;
  }

  /** Every lease held through one subscription. */
  heldBy(subscriptionId: number): PushLease[] {
    return [...this.#leases.values()].filter((lease) => lease.subscriptionId === subscriptionId);
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #arm(): void {
    const next = this.#heap[0];
    if (!next || next.deadlineMs >= this.#timerDueAtMs) return;
    this.#timer?.cancel();
    this.#timerDueAtMs = next.deadlineMs;
    this.#timer = this.#timers.setTimer(next.deadlineMs - this.#clock.now(), () => this.#fire());
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerDueAtMs = Number.POSITIVE_INFINITY;
    const nowMs = this.#clock.now();
    for (let guard = 0; guard < 1_000_000; guard++) {
      const next = this.#heap[0];
      if (!next || next.deadlineMs > nowMs) break;
      heapPop(this.#heap);
      const key = keyOf(next.address);
      // Only the lease still current for its delivery expires; settled ones were removed.
      if (this.#leases.get(key) !== next) continue;
      this.#leases.delete(key);
      this.#onExpired(next);
    }
    this.#arm();
  }
}

function keyOf(address: DeliveryAddress): string {
  return `${address.group}\u0000${address.topic}\u0000${address.offset}`;
}

function heapPush(heap: PushLease[], lease: PushLease): void {
  heap.push(lease);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if ((heap[parent]?.deadlineMs ?? 0) <= lease.deadlineMs) break;
    heap[i] = heap[parent] as PushLease;
    i = parent;
  }
  heap[i] = lease;
}

function heapPop(heap: PushLease[]): PushLease | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length === 0 || !last) return top;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let smallest = i;
    const smallestDeadline = () => (smallest === i ? last.deadlineMs : (heap[smallest]?.deadlineMs ?? 0));
    if (left < heap.length && (heap[left]?.deadlineMs ?? 0) < smallestDeadline()) smallest = left;
    if (right < heap.length && (heap[right]?.deadlineMs ?? 0) < smallestDeadline()) smallest = right;
    if (smallest === i) break;
    heap[i] = heap[smallest] as PushLease;
    i = smallest;
  }
  heap[i] = last;
  return top;
}
