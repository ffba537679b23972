import type { TimerHandle } from '@ricochet/broker';
import type { Clock } from '@ricochet/core';
import { type Duration, durationMs } from './duration.js';
import type { ActivityMark, Quiescence } from './quiescence.js';
import type { FiredBatch, VirtualTimeline } from './virtual-timeline.js';

/** Options of {@link VirtualClock.runUntilIdle}. */
export interface RunUntilIdleOptions {
  /**
   * The most timers to fire before giving up: a consumer that fails forever (an unlimited retry
   * policy, say) never lets the broker go idle. @default 10000 (timers)
   */
  readonly maxTimers?: number;
}

/**
 * The virtual clock of a test broker: the broker's scheduler, leases, delays and long polls run
 * on it, and so can a client's timers (a push consumer's consumption timeout: pass the clock as
 * its `clock` option). It moves only when told to.
 *
 * Every method that moves time waits, after each timer it fires, until the broker and the clients
 * in this process are quiet: the deliveries a due retry causes have reached the connected
 * consumers, their listeners have answered, and the broker has stored what followed (the next
 * retry, the move to the DLQ). So one `advance('2h')` walks a whole retry schedule, each retry at
 * its exact virtual time. Calls are queued: one `advance` starts when the one before has ended.
 */
export interface VirtualClock extends Clock {
  /** The virtual time, in epoch ms. */
  now(): number;
  /**
   * Arm a timer on virtual time: `callback` runs when the clock reaches now + `delayMs` (at once,
   * on the next turn, when `delayMs` ≤ 0). The broker's own timers come through here.
   */
  setTimer(delayMs: number, callback: () => void): TimerHandle;
  /**
   * Move the clock forward by `duration` (`'10s'`, `'2h'`, `'1h30m'`, or ms), firing every timer
   * that falls due on the way, in time order, each at its own time, and waiting after each until
   * everything it caused has played out; the clock then stands at now + `duration`.
   * @throws RangeError when `duration` is negative or not a duration.
   * @throws SettleTimeoutError when the broker stays busy longer than `settleTimeoutMs` (real time).
   */
  advance(duration: Duration): Promise<void>;
  /**
   * Fire timers, from the next one on, until no retry, delay, lease or long poll is left pending:
   * only the broker's periodic upkeep, which `advance` fires too but this does not wait for. The
   * clock stands at the last timer fired.
   * @throws Error when still busy after `maxTimers` timers.
   */
  runUntilIdle(options?: RunUntilIdleOptions): Promise<void>;
}

const DEFAULT_MAX_TIMERS = 10_000;

/** Timer batches one `advance` fires at most, so a timer that re-arms itself every ms ends too. */
const MAX_BATCHES_PER_ADVANCE = 1_000_000;

/** Moves a {@link VirtualTimeline} and waits for quiet after each batch of timers it fires. */
export class ClockDriver implements VirtualClock {
  readonly #timeline: VirtualTimeline;
  readonly #quiescence: Quiescence;
  readonly #clientTimers;
  /** The tail of the queue of time moves; every move starts after the one before has ended. */
  #queue: Promise<void> = Promise.resolve();

  constructor(timeline: VirtualTimeline, quiescence: Quiescence) {
    this.#timeline = timeline;
    this.#quiescence = quiescence;
    this.#clientTimers = timeline.timers('client');
  }

  now(): number {
    return this.#timeline.now();
  }

  setTimer(delayMs: number, callback: () => void): TimerHandle {
    return this.#clientTimers.setTimer(delayMs, callback);
  }

  advance(duration: Duration): Promise<void> {
    const ms = durationMs(duration);
    return this.#exclusive(async () => {
      const targetMs = this.#timeline.now() + ms;
      await this.#quiescence.settle();
      for (let batch = 0; batch < MAX_BATCHES_PER_ADVANCE; batch++) {
        if (!(await this.#fireNextBatch(targetMs))) {
          this.#timeline.moveTo(targetMs);
          return;
        }
      }
      throw new Error(`advance fired ${MAX_BATCHES_PER_ADVANCE} batches of timers and did not reach its end`);
    });
  }

  runUntilIdle(options: RunUntilIdleOptions = {}): Promise<void> {
    const maxTimers = options.maxTimers ?? DEFAULT_MAX_TIMERS;
    if (!(Number.isInteger(maxTimers) && maxTimers >= 0))
      throw new RangeError(`maxTimers must be an integer >= 0, got ${maxTimers}`);
    return this.#exclusive(async () => {
      await this.#quiescence.settle();
      let fired = 0;
      for (let next = this.#nextWork(); next !== undefined; next = this.#nextWork()) {
        if (fired >= maxTimers)
          throw new Error(
            `runUntilIdle fired ${fired} timers and the broker still has work scheduled: a consumer that never succeeds, or a retry policy without end?`,
          );
        const count = await this.#fireNextBatch(next.dueAtMs);
        if (count === 0) return; // cannot happen: the next timer is due by `next` at the latest
        fired += count;
      }
    });
  }

  /** Resolves once every time move queued so far has ended (whether it succeeded or not). */
  idle(): Promise<void> {
    return this.#queue.then(
      () => {},
      () => {},
    );
  }

  /**
   * Fire the timers due at the earliest pending time, if that is no later than `limitMs`, then
   * wait until what they caused has played out. Returns how many fired (0: none was due).
   */
  async #fireNextBatch(limitMs: number): Promise<number> {
    const next = this.#timeline.next();
    if (next === undefined || next.dueAtMs > limitMs) return 0;
    const before = this.#quiescence.mark();
    const firstNewOrder = this.#timeline.nextOrder;
    this.#timeline.moveTo(Math.max(this.#timeline.now(), next.dueAtMs));
    const batch = this.#timeline.fireDue();
    if (await this.#changedNothing(batch, before)) {
      // Nothing but timers changed: what these armed is upkeep, like them.
      this.#timeline.markHousekeepingFrom(firstNewOrder);
      return batch.count;
    }
    await this.#quiescence.settle();
    return batch.count;
  }

  /**
   * The fast path, for the broker's own timers fired on a quiet broker: whether they changed
   * nothing but timers. Upkeep that changed nothing last time is taken at its word when nothing
   * changed as it ran (the broker's upkeep writes to its store as it runs, if it writes at all);
   * other timers get a few turns of the event loop, since the broker defers its dispatch by one. A
   * client's timer never qualifies: a consumption timeout hands its result to a batch that leaves
   * a real millisecond later.
   */
  async #changedNothing(batch: FiredBatch, before: ActivityMark): Promise<boolean> {
    if (batch.anyClient) return false;
    if (batch.allHousekeeping && this.#quiescence.unchangedNow(before)) return true;
    return this.#quiescence.unchangedAfter(before);
  }

  #nextWork() {
    return this.#timeline.next((timer) => !timer.housekeeping);
  }

  #exclusive(move: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(move, move);
    this.#queue = run.catch(() => {});
    return run;
  }
}
