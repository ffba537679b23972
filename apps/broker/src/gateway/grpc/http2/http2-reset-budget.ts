/**
 * How many open streams a client may reset, as a token bucket: the answer to HTTP/2 "rapid reset"
 * (CVE-2023-44487). A client that opens a stream and resets it at once never meets the stream
 * limit (each reset frees its slot), yet every stream still costs the server its header block, its
 * call and whatever the call began. The bucket lets a client cancel as much as a client does, a
 * burst of 1,000 and then 33 a second (nghttp2's defaults since 1.57, which served the front door
 * before), and takes a client past it for an attack. The official RocketMQ clients reset a stream
 * only to cancel a call (a long poll at shutdown).
 */
export class ResetBudget {
  readonly #burst: number;
  readonly #perSecond: number;
  readonly #now: () => number;
  #tokens: number;
  #refilledAtMs: number;

  constructor(options: { readonly burst: number; readonly perSecond: number; readonly now: () => number }) {
    this.#burst = options.burst;
    this.#perSecond = options.perSecond;
    this.#now = options.now;
    this.#tokens = options.burst;
    this.#refilledAtMs = options.now();
  }

  /** One open stream reset by the client: `false` once the budget is spent. */
  take(): boolean {
    const nowMs = this.#now();
    const earned = ((nowMs - this.#refilledAtMs) * this.#perSecond) / 1_000;
    if (earned > 0) {
      this.#tokens = Math.min(this.#burst, this.#tokens + earned);
      this.#refilledAtMs = nowMs;
    }
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
