import type { DeliveredMessage } from '@ricochet/protocol';

/**
 * The receipt handles a {@link FakeBroker} handed out and that are still live, simple and push
 * deliveries alike: the default `ack`, `nack`, `release` and `changeInvisibleDuration` answers
 * accept a live handle once and refuse any other with 410, as the broker does (S3).
 */
export class FakeLeases {
  /** Live receipt handle → message id. */
  readonly live = new Map<string, string>();
  #nextHandle = 0;

  /** `message` with a fresh receipt handle, live until it is settled. */
  lease(message: DeliveredMessage): DeliveredMessage {
    this.#nextHandle += 1;
    const receiptHandle = `lease-${this.#nextHandle}`;
    this.live.set(receiptHandle, message.messageId);
    return { ...message, receiptHandle };
  }

  /** End a lease; false when the handle was not live. */
  end(receiptHandle: string): boolean {
    return this.live.delete(receiptHandle);
  }
}
