/**
 * The broker did not go quiet within `settleTimeoutMs` of real time: something keeps it busy (a
 * client sending in a loop, a store that does not commit).
 */
export class SettleTimeoutError extends Error {
  constructor(settleTimeoutMs: number, busy: string, options?: ErrorOptions) {
    super(`the broker was still busy after ${settleTimeoutMs} ms of real time: ${busy}`, options);
    this.name = 'SettleTimeoutError';
  }
}

/**
 * An assertion of the kit failed: `expectInDlq` found the message elsewhere, or `waitForDelivery`
 * did not see the delivery in time. The message says where the message stands instead.
 */
export class ExpectationError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ExpectationError';
  }
}
