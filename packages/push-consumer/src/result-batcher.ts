import { IdleWaiters, type RequestFrameInput, TickBatcher } from '@ricochet/client';
import { assertNever } from '@ricochet/core';
import type { SettledFrame } from '@ricochet/protocol';

/** How a delivery is settled: commit (`ack`), fail (`nack`), or hand back unprocessed (`release`, C2). */
export type ResultAction = 'ack' | 'nack' | 'release';

/** One delivery's result, waiting to be sent. */
export interface PendingResult {
  readonly action: ResultAction;
  readonly receiptHandle: string;
  /** `nack` only: why processing failed, at most 1 024 characters. */
  readonly reason?: string;
  /** `nack` only: the delay before the next delivery, instead of the group's retry policy. */
  readonly retryAfterMs?: number;
  /** `nack` only: to the group's DLQ now, whatever attempts remain (D3). */
  readonly deadLetter?: true;
  /** `nack` with `deadLetter` only: because the listener threw a non-retryable error (X1). */
  readonly nonRetryable?: true;
  /** `nack` with `retryAfterMs` only: a postponement, no failure counted (X4). */
  readonly postpone?: true;
}

/** A frame that settles deliveries, as the connection takes it (without `id`). */
export type ResultFrame = Extract<RequestFrameInput, { readonly type: ResultAction }>;

/** How one sent batch ended: the broker's per-handle failures, or an error for the whole frame. */
export type BatchOutcome = { readonly failures: SettledFrame['failures'] } | { readonly error: unknown };

/** Options of {@link ResultBatcher}. */
export interface ResultBatcherOptions<TResult extends PendingResult> {
  /** How long a result may wait for others to share its frame, in ms. */
  readonly flushDelayMs: number;
  /** The most results in one frame; a full batch is sent at once. At most 1 024 (the protocol's limit). */
  readonly maxBatchSize: number;
  /** Send one frame and resolve with its `settled` answer. */
  readonly send: (frame: ResultFrame) => Promise<SettledFrame>;
  /** Checked as a batch is sent: results that fail it are dropped, never sent. */
  readonly isSendable: (result: TResult) => boolean;
  /** Called as a batch is handed to the connection, before its answer. */
  readonly onSent: (results: readonly TResult[]) => void;
  /** Called once per sent batch, with its results in frame order (a failure's `index` points into it). */
  readonly onSettled: (results: readonly TResult[], outcome: BatchOutcome) => void;
}

/**
 * Collects delivery results into `ack`, `nack` and `release` frames, many handles per frame: a
 * result waits at most `flushDelayMs` for others, and as soon as one action has a full frame's
 * worth, everything queued goes at once. The broker commits each frame durably in one go, so
 * batching is what keeps the consume rate up.
 */
export class ResultBatcher<TResult extends PendingResult> {
  readonly #options: ResultBatcherOptions<TResult>;
  readonly #queue: TickBatcher<TResult>;
  /** Results of each action in `#queue`, so a full frame's worth is sent without waiting. */
  readonly #queuedByAction: Record<ResultAction, number> = { ack: 0, nack: 0, release: 0 };
  #inFlight = 0;
  readonly #idle = new IdleWaiters(() => this.pendingCount === 0);
  #closed = false;

  constructor(options: ResultBatcherOptions<TResult>) {
    this.#options = options;
    this.#queue = new TickBatcher<TResult>({
      delayMs: options.flushDelayMs,
      flush: (results) => this.#sendQueued(results),
    });
  }

  /** Results queued or sent and not yet answered. */
  get pendingCount(): number {
    return this.#queue.size + this.#inFlight;
  }

  /** Queue `result`; ignored after {@link close}. */
  add(result: TResult): void {
    if (this.#closed) return;
    this.#queue.add(result);
    this.#queuedByAction[result.action] += 1;
    if (this.#queuedByAction[result.action] >= this.#options.maxBatchSize) this.flush();
  }

  /** Send everything queued now. */
  flush(): void {
    this.#queue.flush();
  }

  /** Resolves once every sent frame has been answered (or has failed) and nothing is queued. */
  idle(): Promise<void> {
    return this.#idle.whenIdle();
  }

  /** Drop what is queued and take no more results. Frames already sent still report their outcome. */
  close(): void {
    this.#closed = true;
    this.#queue.clear();
    this.#countSent();
    this.#idle.check();
  }

  /** One frame per action and `maxBatchSize` results, `ack` first, each in the order queued. */
  #sendQueued(results: readonly TResult[]): void {
    this.#countSent();
    for (const action of RESULT_ACTIONS) {
      const ofAction = results.filter((result) => result.action === action);
      for (let start = 0; start < ofAction.length; start += this.#options.maxBatchSize) {
        this.#sendBatch(action, ofAction.slice(start, start + this.#options.maxBatchSize));
      }
    }
    // Results dropped as unsendable leave the queue too.
    this.#idle.check();
  }

  #countSent(): void {
    for (const action of RESULT_ACTIONS) this.#queuedByAction[action] = 0;
  }

  #sendBatch(action: ResultAction, results: readonly TResult[]): void {
    const batch = results.filter((result) => this.#options.isSendable(result));
    if (batch.length === 0) return;
    this.#inFlight += batch.length;
    const finish = (outcome: BatchOutcome): void => {
      this.#inFlight -= batch.length;
      try {
        this.#options.onSettled(batch, outcome);
      } finally {
        this.#idle.check();
      }
    };
    this.#options.send(frameOf(action, batch)).then(
      (settled) => finish({ failures: settled.failures }),
      (error: unknown) => finish({ error }),
    );
    this.#options.onSent(batch);
  }
}

const RESULT_ACTIONS: readonly ResultAction[] = ['ack', 'nack', 'release'];

function frameOf(action: ResultAction, batch: readonly PendingResult[]): ResultFrame {
  switch (action) {
    case 'ack':
      return { type: 'ack', receiptHandles: batch.map((result) => result.receiptHandle) };
    case 'release':
      return { type: 'release', receiptHandles: batch.map((result) => result.receiptHandle) };
    case 'nack':
      return {
        type: 'nack',
        items: batch.map(({ receiptHandle, reason, retryAfterMs, deadLetter, nonRetryable, postpone }) => ({
          receiptHandle,
          ...(reason === undefined ? {} : { reason }),
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          ...(deadLetter === undefined ? {} : { deadLetter }),
          ...(nonRetryable === undefined ? {} : { nonRetryable }),
          ...(postpone === undefined ? {} : { postpone }),
        })),
      };
    default:
      return assertNever(action, 'result action');
  }
}
