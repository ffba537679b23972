import { clearTimeout, setImmediate, setTimeout } from 'node:timers';
import type { SocketActivity } from './socket-activity.js';
import type { StoreActivity } from './store-activity.js';
import { SettleTimeoutError } from './testing-errors.js';
import type { VirtualTimeline } from './virtual-timeline.js';

/**
 * How long, in real ms, one quiet check waits. The longest pause the client packages take between
 * a cause and its effect is the push consumer's 1 ms result batching; a check is a real timer of
 * at least that long, armed after the previous check, so such a timer armed before it has fired
 * (Node runs due timers in expiry order) and its frame shows as bytes written.
 */
const CHECK_INTERVAL_MS = 1;

/**
 * Consecutive quiet checks that make the broker quiet. Two: a client timer armed a turn after the
 * bytes that caused it were read (a listener whose promise resolves a turn later) may be armed
 * after the next check was, and fire after it; the check after that was armed later still.
 */
const QUIET_CHECKS = 2;

/** Event-loop turns the fast path lets pass after a firing before it looks (see {@link Quiescence.unchangedAfter}). */
const FAST_PATH_TURNS = 3;

/** The longest {@link Quiescence.nextChange} waits before its caller looks again anyway, in real ms. */
const RECHECK_MS = 100;

/** A snapshot of everything that moves: compare two to tell whether anything happened in between. */
export interface ActivityMark {
  readonly bytes: number;
  readonly storeCalls: number;
  readonly timerChanges: number;
}

export interface QuiescenceOptions {
  readonly sockets: SocketActivity;
  readonly store: StoreActivity;
  readonly timeline: VirtualTimeline;
  /** How long, in real ms, a settle may wait for the broker to go quiet before it fails. */
  readonly settleTimeoutMs: number;
}

/**
 * Tells when the broker and the clients in this process have done everything that follows from
 * what happened so far — "quiet" — without any hook inside the broker. Quiet means, all at once:
 * no store promise pending (awaited as an event), no byte on its way between a broker socket and
 * its peer (exact when the client runs in this process: one end's written count equals the other's
 * read count), no virtual timer due at the current instant, and nothing at all changed — bytes,
 * store calls, timers — over {@link QUIET_CHECKS} checks {@link CHECK_INTERVAL_MS} apart.
 *
 * What it cannot see: work a listener does outside the broker's sockets and store (a real HTTP
 * call, a real `setTimeout`). A settle may end before such work does; the assertions that wait
 * for a fact (`waitForDelivery`) cover that case.
 */
export class Quiescence {
  readonly #options: QuiescenceOptions;

  constructor(options: QuiescenceOptions) {
    this.#options = options;
  }

  mark(): ActivityMark {
    return {
      bytes: this.#options.sockets.bytes,
      storeCalls: this.#options.store.started,
      timerChanges: this.#options.timeline.changes,
    };
  }

  /** Whether something is under way right now. */
  get busy(): boolean {
    const { sockets, store, timeline } = this.#options;
    return store.pending > 0 || timeline.hasDueNow || sockets.inFlight;
  }

  /**
   * Resolves once quiet (see the class comment).
   * @throws SettleTimeoutError when the broker is still busy after `settleTimeoutMs` of real time.
   * @throws the first error a virtual timer's callback threw since the last settle.
   */
  async settle(): Promise<void> {
    const { store, timeline, settleTimeoutMs } = this.#options;
    const deadline = performance.now() + settleTimeoutMs;
    let last = this.mark();
    let quietChecks = 0;
    // Bounded by the deadline; the count bounds it too, should the clock misbehave.
    for (let check = 0; check < settleTimeoutMs * 1_000; check++) {
      throwTimerErrors(timeline);
      const leftMs = deadline - performance.now();
      if (leftMs <= 0) break;
      if (store.pending > 0) {
        await atMost(store.whenIdle(), leftMs);
        quietChecks = 0;
        last = this.mark();
        continue;
      }
      await delay(CHECK_INTERVAL_MS);
      const now = this.mark();
      if (this.busy || !sameMark(now, last)) {
        last = now;
        quietChecks = 0;
        continue;
      }
      quietChecks += 1;
      if (quietChecks >= QUIET_CHECKS) {
        throwTimerErrors(timeline);
        return;
      }
    }
    throw new SettleTimeoutError(settleTimeoutMs, this.#describeBusy());
  }

  /**
   * The fast path after the broker's timers fired on a quiet broker: let a few turns of the event
   * loop pass (the broker defers its dispatch by a turn) and say whether nothing but timers
   * changed since `before` and nothing is under way. A firing that changed nothing this way (the
   * broker's periodic upkeep finding nothing to do) costs microseconds instead of a settle.
   */
  async unchangedAfter(before: ActivityMark): Promise<boolean> {
    for (let turn = 0; turn < FAST_PATH_TURNS; turn++) await nextTurn();
    const after = this.mark();
    return after.bytes === before.bytes && after.storeCalls === before.storeCalls && !this.busy;
  }

  /** Whether nothing but timers changed since `before`, and nothing is under way, right now. */
  unchangedNow(before: ActivityMark): boolean {
    const now = this.mark();
    return now.bytes === before.bytes && now.storeCalls === before.storeCalls && !this.busy;
  }

  /**
   * Resolves when bytes move on the broker's connections or a virtual timer is armed, fired or
   * cancelled after `since`, or after {@link RECHECK_MS} at most, or at `deadline` (a
   * `performance.now()` time). Store calls do not count: reading the admin API makes some, and a
   * delivery, a result or a lease expiry always moves bytes or a timer.
   */
  async nextChange(since: ActivityMark, deadline: number): Promise<void> {
    const until = Math.min(deadline, performance.now() + RECHECK_MS);
    for (let check = 0; check < RECHECK_MS * 10 && performance.now() < until; check++) {
      const now = this.mark();
      if (now.bytes !== since.bytes || now.timerChanges !== since.timerChanges) return;
      if (this.#options.sockets.inFlight || this.#options.timeline.hasDueNow) return;
      await delay(Math.min(CHECK_INTERVAL_MS, Math.max(0, until - performance.now())));
    }
  }

  #describeBusy(): string {
    const { sockets, store, timeline } = this.#options;
    const reasons: string[] = [];
    if (store.pending > 0) reasons.push(`${store.pending} store write(s) pending`);
    if (sockets.inFlight) reasons.push('bytes still on their way between the broker and a client');
    if (timeline.hasDueNow) reasons.push('a timer is due and has not fired');
    if (reasons.length === 0) reasons.push('traffic never paused (a client sending in a loop?)');
    return `${reasons.join('; ')}; watching ${sockets.describe()}`;
  }
}

function sameMark(a: ActivityMark, b: ActivityMark): boolean {
  return a.bytes === b.bytes && a.storeCalls === b.storeCalls && a.timerChanges === b.timerChanges;
}

function throwTimerErrors(timeline: VirtualTimeline): void {
  const errors = timeline.takeErrors();
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} virtual timers threw`);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `promise`, or nothing after `ms`; the timer is cleared either way, so it holds no process open. */
async function atMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
