import type { OutgoingMessage, SendReceipt } from '@ricochet/protocol';

/** The most messages one merged send stores; a turn with more makes several. */
const MAX_MERGED_MESSAGES = 1_024;

interface WaitingSend {
  readonly messages: readonly OutgoingMessage[];
  readonly resolve: (receipts: SendReceipt[]) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Sends of many calls, made in one turn of the event loop, stored by one call of the broker's
 * `send` (the request pipeline's merging stage, docs/architecture.md "The service seam").
 *
 * A front door whose clients send one message per call (RocketMQ's `SendMessage`, every official
 * client) would otherwise make one engine send per message, and each pays for its own validation
 * pass, dedup pin, durability wait and wake-up of consumers; merged, a turn's messages pay once.
 * Each call still gets its own receipts, in its own order, and nothing about a message changes:
 * R1 (durable before the answer), R3 (a copy of an id within the batch waits for the first) and
 * R4 (each message's own topic throttled) hold per message, as they do within a client's batch.
 *
 * The merge waits for the end of the turn (`setImmediate`): the calls of every connection read in
 * it are there by then, and a send waits for its commit anyway, which takes longer.
 */
export class SendMerger {
  readonly #send: (messages: readonly OutgoingMessage[]) => Promise<SendReceipt[]>;
  #waiting: WaitingSend[] = [];
  #waitingMessages = 0;
  #scheduled = false;

  constructor(send: (messages: readonly OutgoingMessage[]) => Promise<SendReceipt[]>) {
    this.#send = send;
  }

  /** Store `messages` with the turn's other sends; resolves with their receipts, in order. */
  send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ messages, resolve, reject });
      this.#waitingMessages += messages.length;
      if (this.#waitingMessages >= MAX_MERGED_MESSAGES) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#flush();
        });
      }
    });
  }

  #flush(): void {
    const waiting = this.#waiting;
    if (waiting.length === 0) return;
    this.#waiting = [];
    this.#waitingMessages = 0;
    const only = waiting.length === 1 ? waiting[0] : undefined;
    if (only !== undefined) {
      this.#send(only.messages).then(only.resolve, only.reject);
      return;
    }
    this.#send(waiting.flatMap((each) => each.messages)).then(
      (receipts) => {
        let at = 0;
        for (const each of waiting) {
          each.resolve(receipts.slice(at, at + each.messages.length));
          at += each.messages.length;
        }
      },
      (error: unknown) => {
        for (const each of waiting) each.reject(error);
      },
    );
  }
}
