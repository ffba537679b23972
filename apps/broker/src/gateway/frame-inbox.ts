/**
 * How long the frames that arrived in one turn of the event loop may hold it, every connection's
 * together, in ms, before the rest wait for the next turn: the engine's own passes stop after 1 ms
 * (`loop-budget`), and a frame is often a batch (up to 256 sends, a settle of 32 handles), so a
 * little more lets a busy connection's batches through without adding a turn per frame.
 */
export const INBOUND_TURN_BUDGET_MS = 2;

/**
 * One budget for every session's incoming frames in a turn of the event loop (issue 43, "a quiet
 * event loop"). A socket read hands over whatever the kernel held, up to 64 KiB and many reads in
 * one I/O callback: on a connection whose client settles faster than the broker keeps up, that is
 * thousands of nacks, and handling them all at once held the loop for up to 200 ms in W4, while
 * retries fell due and deliveries waited behind them. The first frame of a turn starts the clock;
 * once {@link budgetMs} has run, the frames after it go to their session's {@link FrameInbox} and
 * the loop gets to its timers and immediates (due retries, push dispatch) before they are handled.
 *
 * It is one budget, not one per connection, because it is one loop: ten busy connections with a
 * budget each would hold it ten times as long.
 */
export class InboundBudget {
  readonly budgetMs: number;
  readonly #workClock: () => number;
  /** When the turn's first frame was handed over; `undefined` until a frame comes in a new turn. */
  #turnStartedMs: number | undefined;

  constructor(budgetMs = INBOUND_TURN_BUDGET_MS, workClock: () => number = () => performance.now()) {
    this.budgetMs = budgetMs;
    this.#workClock = workClock;
  }

  /** Whether one more frame may be handled in this turn; the turn's first always may. */
  admit(): boolean {
    const nowMs = this.#workClock();
    if (this.#turnStartedMs === undefined) {
      this.#turnStartedMs = nowMs;
      // The check phase comes right after the I/O callbacks of a turn: the next turn starts over.
      setImmediate(() => {
        this.#turnStartedMs = undefined;
      });
      return true;
    }
    return nowMs - this.#turnStartedMs < this.budgetMs;
  }
}

/** The one loop's budget, shared by every session of the process. */
export const EVENT_LOOP_INBOUND = new InboundBudget();

/** What a {@link FrameInbox} holds frames for: its connection's reading, and the session's handler. */
export interface FrameInboxTarget {
  /** Stop reading the connection: the kernel's buffer, then TCP's window, hold the client back. */
  pauseReading(): void;
  resumeReading(): void;
  /** Handle one frame, as it would have been handled when it arrived. */
  handle(frame: Uint8Array): void;
}

/**
 * One session's frames that arrived after the turn's {@link InboundBudget} ran out, in arrival
 * order: handled in later turns, within the budget, before any frame that comes after them. While
 * it holds any, the connection is not read, so it holds at most what one read had already taken
 * from the socket.
 */
export class FrameInbox {
  readonly #budget: InboundBudget;
  readonly #target: FrameInboxTarget;
  #waiting: Uint8Array[] = [];
  /** The next of {@link #waiting} to handle: the array is replaced once handled, not shifted. */
  #next = 0;
  #drainQueued = false;

  constructor(budget: InboundBudget, target: FrameInboxTarget) {
    this.#budget = budget;
    this.#target = target;
  }

  /** Frames waiting to be handled. */
  get size(): number {
    return this.#waiting.length - this.#next;
  }

  /** A frame that arrived: handled now when nothing waits and the turn has budget left, else queued. */
  offer(frame: Uint8Array): void {
    if (this.size === 0 && this.#budget.admit()) {
      this.#target.handle(frame);
      return;
    }
    this.#waiting.push(frame);
    if (this.size === 1) this.#target.pauseReading();
    this.#queueDrain();
  }

  /**
   * Handle every waiting frame now, whatever the budget: the connection closed, and what its client
   * sent before closing (acks among it) is handled before the close is, as it would have been.
   */
  flush(): void {
    while (this.size > 0) this.#target.handle(this.#take());
  }

  #queueDrain(): void {
    if (this.#drainQueued) return;
    this.#drainQueued = true;
    setImmediate(() => {
      this.#drainQueued = false;
      this.#drain();
    });
  }

  #drain(): void {
    while (this.size > 0 && this.#budget.admit()) this.#target.handle(this.#take());
    if (this.size > 0) this.#queueDrain();
    else this.#target.resumeReading();
  }

  #take(): Uint8Array {
    const frame = this.#waiting[this.#next++] as Uint8Array;
    if (this.#next === this.#waiting.length) {
      this.#waiting = [];
      this.#next = 0;
    }
    return frame;
  }
}
