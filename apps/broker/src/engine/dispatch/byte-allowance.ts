import { deliveredMessageBytes, type SizedMessage } from '@ricochet/protocol';

/**
 * The bytes of messages (as `deliveredMessageBytes` estimates them) that one take of Ready
 * messages may still hand out: a receive's answer is one frame, which must stay below the frame
 * limit of its client's session, or the client drops the connection and never gets the messages.
 *
 * The first message may go past the allowance when the caller says so: a message larger than
 * the whole allowance (but within the body limit) must go somehow, and alone is the least a frame
 * can carry. Once a message does not fit, nothing more is admitted, so the take stops there and
 * the messages keep their order for the next one.
 */
export class ByteAllowance {
  #remainingBytes: number;
  readonly #firstMayExceed: boolean;
  #admitted = false;
  #full = false;

  constructor(maxBytes: number, firstMayExceed: boolean) {
    this.#remainingBytes = maxBytes;
    this.#firstMayExceed = firstMayExceed;
  }

  /** A message did not fit: the take stops. */
  get full(): boolean {
    return this.#full;
  }

  /** Spend the bytes of `message` if it fits, and say whether it did. */
  admit(message: SizedMessage): boolean {
    if (this.#full) return false;
    const bytes = deliveredMessageBytes(message);
    if (bytes > this.#remainingBytes && (this.#admitted || !this.#firstMayExceed)) {
      this.#full = true;
      return false;
    }
    this.#remainingBytes -= bytes;
    this.#admitted = true;
    return true;
  }
}
