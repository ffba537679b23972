import { setImmediate } from 'node:timers';
import type { TimerHandle, TimerService } from '@ricochet/broker';
import type { Clock } from '@ricochet/core';

/** Who armed a timer: the broker, or a client (a push consumer's consumption timeout). */
export type TimerOrigin = 'broker' | 'client';

/** One timer on the virtual timeline. */
export interface VirtualTimer {
  readonly dueAtMs: number;
  /** Arming order: timers due at the same time fire in this order. */
  readonly order: number;
  readonly origin: TimerOrigin;
  /**
   * Periodic upkeep (armed while the broker started, or re-armed by a firing that changed
   * nothing): `runUntilIdle` does not wait for it, `advance` fires it like any other.
   */
  housekeeping: boolean;
}

interface TimerEntry extends VirtualTimer {
  readonly callback: () => void;
  state: 'pending' | 'fired' | 'cancelled';
}

/** What one {@link VirtualTimeline.fireDue} call fired. */
export interface FiredBatch {
  readonly count: number;
  /** Whether any of them was a client's. */
  readonly anyClient: boolean;
  /** Whether every one of them was housekeeping. */
  readonly allHousekeeping: boolean;
}

/** The most timers one `fireDue` call fires: a timer that re-arms itself at 0 ms forever ends here. */
const MAX_FIRED_PER_INSTANT = 100_000;

/**
 * Virtual time: a clock that moves only when told to, and the timers armed on it, fired in time
 * order (ties in arming order). The timeline knows nothing of the broker; the driver moves it and
 * decides when the effects of a firing have played out.
 *
 * A timer armed for the current instant (delay ≤ 0) fires by itself on the next turn of the event
 * loop, as a real one would: nothing else would ever fire it while the clock stands still.
 */
export class VirtualTimeline implements Clock {
  #nowMs: number;
  #timers: TimerEntry[] = [];
  #order = 0;
  #changes = 0;
  #armingHousekeeping = false;
  #dueNowQueued = false;
  #closed = false;
  readonly #errors: unknown[] = [];

  constructor(startMs: number) {
    if (!Number.isFinite(startMs))
      throw new RangeError(`the virtual clock must start at a finite time, got ${startMs}`);
    this.#nowMs = startMs;
  }

  now(): number {
    return this.#nowMs;
  }

  /** A {@link TimerService} whose timers are marked as armed by `origin`. */
  timers(origin: TimerOrigin): TimerService {
    return { setTimer: (delayMs, callback) => this.setTimer(delayMs, callback, origin) };
  }

  setTimer(delayMs: number, callback: () => void, origin: TimerOrigin): TimerHandle {
    const entry: TimerEntry = {
      dueAtMs: this.#nowMs + Math.max(0, Number.isFinite(delayMs) ? delayMs : 0),
      order: this.#order++,
      origin,
      housekeeping: this.#armingHousekeeping,
      callback,
      state: 'pending',
    };
    this.#timers.push(entry);
    this.#changes += 1;
    if (entry.dueAtMs <= this.#nowMs) this.#queueDueNow();
    return {
      cancel: () => {
        if (entry.state !== 'pending') return;
        entry.state = 'cancelled';
        this.#changes += 1;
        this.#timers.splice(this.#timers.indexOf(entry), 1);
      },
    };
  }

  /** Timers armed, fired or cancelled so far: a change means something armed or moved a timer. */
  get changes(): number {
    return this.#changes;
  }

  /** The order the next timer armed will get. */
  get nextOrder(): number {
    return this.#order;
  }

  /** Timers waiting to fire. */
  get pendingCount(): number {
    return this.#timers.length;
  }

  /** Whether a timer is due at the current instant and has not fired yet. */
  get hasDueNow(): boolean {
    return this.#timers.some((timer) => timer.dueAtMs <= this.#nowMs);
  }

  /** The earliest pending timer that `include` accepts (all by default). */
  next(include: (timer: VirtualTimer) => boolean = () => true): VirtualTimer | undefined {
    let earliest: TimerEntry | undefined;
    for (const timer of this.#timers) {
      if (!include(timer)) continue;
      if (
        !earliest ||
        timer.dueAtMs < earliest.dueAtMs ||
        (timer.dueAtMs === earliest.dueAtMs && timer.order < earliest.order)
      )
        earliest = timer;
    }
    return earliest;
  }

  /** Mark the pending timers armed at or after `order` as housekeeping. */
  markHousekeepingFrom(order: number): void {
    for (const timer of this.#timers) if (timer.order >= order) timer.housekeeping = true;
  }

  /** Timers armed while `arm` runs are housekeeping (the broker's own upkeep, armed at start). */
  armHousekeeping<T>(arm: () => T): T {
    this.#armingHousekeeping = true;
    try {
      return arm();
    } finally {
      this.#armingHousekeeping = false;
    }
  }

  /**
   * Move the clock forward to `ms` without firing anything.
   * @throws RangeError when `ms` is earlier than now: virtual time never runs backwards.
   */
  moveTo(ms: number): void {
    if (!(ms >= this.#nowMs))
      throw new RangeError(`the virtual clock cannot go back from ${this.#nowMs} to ${ms}`);
    if (ms !== this.#nowMs) this.#changes += 1;
    this.#nowMs = ms;
  }

  /**
   * Fire every timer due at or before now, earliest first, including those the callbacks arm for
   * the same instant. A callback that throws does not stop the others; its error is kept for
   * {@link takeErrors}.
   */
  fireDue(): FiredBatch {
    let count = 0;
    let anyClient = false;
    let allHousekeeping = true;
    for (let due = this.#nextDue(); due; due = this.#nextDue()) {
      if (count >= MAX_FIRED_PER_INSTANT) {
        this.#errors.push(
          new Error(
            `more than ${MAX_FIRED_PER_INSTANT} timers fired at one virtual instant: a timer re-arms itself at 0 ms`,
          ),
        );
        break;
      }
      this.#timers.splice(this.#timers.indexOf(due), 1);
      due.state = 'fired';
      this.#changes += 1;
      count += 1;
      if (due.origin === 'client') anyClient = true;
      if (!due.housekeeping) allHousekeeping = false;
      try {
        due.callback();
      } catch (error) {
        this.#errors.push(error);
      }
    }
    return { count, anyClient, allHousekeeping };
  }

  /** The errors timer callbacks threw since the last call, oldest first. */
  takeErrors(): unknown[] {
    return this.#errors.splice(0);
  }

  /** Stop firing by itself; pending timers stay where they are. */
  close(): void {
    this.#closed = true;
  }

  #nextDue(): TimerEntry | undefined {
    const next = this.next() as TimerEntry | undefined;
    return next && next.dueAtMs <= this.#nowMs ? next : undefined;
  }

  #queueDueNow(): void {
    if (this.#dueNowQueued || this.#closed) return;
    this.#dueNowQueued = true;
    setImmediate(() => {
      this.#dueNowQueued = false;
      if (!this.#closed) this.fireDue();
    });
  }
}
