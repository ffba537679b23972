import { abortedError, TickBatcher } from '@ricochet/client';
import { BrokerError, type SettledFrame } from '@ricochet/protocol';

/** The most handles per `ack` frame, as the protocol allows. */
const MAX_HANDLES_PER_FRAME = 1_024;

interface QueuedAck {
  readonly receiptHandle: string;
  readonly messageId: string;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  settled: boolean;
}

/**
 * Acks made in the same tick travel in one `ack` frame, each with its own outcome from the
 * broker's per-handle failures. A receive loop that acks every message of a batch at once then
 * costs the broker one frame and one durable commit instead of one per message.
 */
export class AckBatcher {
  readonly #send: (receiptHandles: string[]) => Promise<SettledFrame>;
  readonly #queue = new TickBatcher<QueuedAck>({ flush: (queued) => this.#flush(queued) });

  constructor(send: (receiptHandles: string[]) => Promise<SettledFrame>) {
    this.#send = send;
  }

  /**
   * Ack one handle. `signal` stops the wait (`ABORTED`); an ack already sent may still commit.
   */
  ack(receiptHandle: string, messageId: string, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortedError(signal, 'the ack'));
    return new Promise<void>((resolve, reject) => {
      const queued: QueuedAck = { receiptHandle, messageId, resolve, reject, settled: false };
      signal?.addEventListener(
        'abort',
        () => {
          if (queued.settled) return;
          queued.settled = true;
          reject(abortedError(signal, 'the ack'));
        },
        { once: true },
      );
      this.#queue.add(queued);
    });
  }

  #flush(tick: readonly QueuedAck[]): void {
    // Aborted while queued: rejected already, and never sent.
    const queued = tick.filter((entry) => !entry.settled);
    for (let start = 0; start < queued.length; start += MAX_HANDLES_PER_FRAME) {
      const batch = queued.slice(start, start + MAX_HANDLES_PER_FRAME);
      this.#send(batch.map((entry) => entry.receiptHandle)).then(
        (settled) => {
          const failed = new Map(settled.failures.map((failure) => [failure.index, failure]));
          batch.forEach((entry, index) => {
            if (entry.settled) return;
            entry.settled = true;
            const failure = failed.get(index);
            if (failure === undefined) entry.resolve();
            else
              entry.reject(
                new BrokerError(failure.code, failure.message, { details: { messageId: entry.messageId } }),
              );
          });
        },
        (error: unknown) => {
          for (const entry of batch) {
            if (entry.settled) continue;
            entry.settled = true;
            entry.reject(error);
          }
        },
      );
    }
  }
}
