import type { CommittedWrites } from './write-pipeline.js';

/**
 * How long the first batch of the owner's feed waits to be applied with the ones after it, in ms,
 * unless {@link FEED_APPLY_ROWS} rows or {@link FEED_APPLY_BATCHES} batches arrive first. A commit
 * of the local copy costs about 80 µs of CPU whatever it holds (LMDB, measured: 6.6 µs a message
 * in commits of 20, 2.5 in commits of 500), and an owner under load commits a batch every
 * millisecond or two, of about 20 messages with three brokers: applied one by one, a standby spent
 * more on commits than on the messages. Nothing waits for the copy while standing by; a takeover
 * applies what arrived first (`WarmCopy.settled`).
 */
export const FEED_APPLY_DELAY_MS = 20;
/** Rows (messages and history) of arrived batches that are applied at once. */
export const FEED_APPLY_ROWS = 512;
/**
 * Arrived batches that are applied at once: half of what the feed's reader lets wait before it
 * stops reading (`MAX_WAITING_BATCHES`, `standby-feed.ts`), so that it never stops for this delay.
 */
export const FEED_APPLY_BATCHES = 32;

/** A batch of the feed that arrived, with the answer its caller waits for. */
export interface ArrivedBatch<TAnswer> {
  readonly batch: CommittedWrites;
  readonly resolve: (answer: TAnswer) => void;
}

/** What {@link FeedArrivals} needs of the copy it gathers batches for. */
export interface FeedArrivalsParts {
  /**
   * Queue an apply of what arrived (the copy runs it after the step or batches in progress, and
   * it {@link FeedArrivals.take}s what arrived by then). Called once until that apply takes them.
   */
  readonly queueApply: () => void;
  /** How long the first batch waits for others. @default FEED_APPLY_DELAY_MS */
  readonly delayMs?: number;
}

/**
 * The feed's batches a warm copy has not applied yet, gathered so that it applies several in one
 * commit: an apply is queued once {@link FEED_APPLY_ROWS} rows or {@link FEED_APPLY_BATCHES}
 * batches wait, or {@link FEED_APPLY_DELAY_MS} after the first of them, or at once when asked
 * ({@link flush}, before a takeover). Batches that arrive while a queued apply waits its turn join it.
 */
export class FeedArrivals<TAnswer> {
  readonly #parts: FeedArrivalsParts;
  readonly #delayMs: number;
  #arrived: ArrivedBatch<TAnswer>[] = [];
  /** The rows (messages and history) of {@link #arrived}. */
  #rows = 0;
  /** An apply is queued and has not taken the batches yet. */
  #queued = false;
  /** Queues the apply {@link #delayMs} after the first batch arrived. */
  #timer: NodeJS.Timeout | undefined;

  constructor(parts: FeedArrivalsParts) {
    this.#parts = parts;
    this.#delayMs = parts.delayMs ?? FEED_APPLY_DELAY_MS;
  }

  /** Keep `arrived` for the next apply, queuing it if enough waits. */
  add(arrived: ArrivedBatch<TAnswer>): void {
    this.#arrived.push(arrived);
    this.#rows += arrived.batch.messages.length + arrived.batch.history.length;
    if (this.#rows >= FEED_APPLY_ROWS || this.#arrived.length >= FEED_APPLY_BATCHES) {
      this.flush();
    } else if (this.#timer === undefined && !this.#queued) {
      this.#timer = setTimeout(() => this.flush(), this.#delayMs);
      // A copy left behind (its store closed) keeps no process alive.
      this.#timer.unref();
    }
  }

  /** Queue the apply of what waits now, unless it is queued already or nothing waits. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#queued || this.#arrived.length === 0) return;
    this.#queued = true;
    this.#parts.queueApply();
  }

  /** The batches that arrived, oldest first, for the apply that runs now: later ones queue another. */
  take(): ArrivedBatch<TAnswer>[] {
    const arrived = this.#arrived;
    this.#arrived = [];
    this.#rows = 0;
    this.#queued = false;
    return arrived;
  }
}
