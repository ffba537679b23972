/**
 * Which of a connection's endpoints the next connect attempt goes to, for a client given several
 * brokers of which one serves at a time (an owner and its standbys on one store: only the owner
 * listens, and a standby that takes over listens on its own host and port).
 *
 * It starts at the first endpoint. A failed attempt moves it to the next, wrapping around after
 * the last, so the reconnect backoff (rule C1) spaces the attempts and the list is walked in
 * order. A successful attempt leaves it where it is: after that session drops, the first attempt
 * goes to the same endpoint again, since a drop may be a blip or a broker restarting in place.
 * The reconnect loop is single-flight, so attempts, and the moves they make, never overlap.
 */
export class EndpointRotation<TEndpoint> {
  readonly #endpoints: readonly TEndpoint[];
  #index = 0;

  /** @param endpoints - at least one, tried in this order. */
  constructor(endpoints: readonly TEndpoint[]) {
    if (endpoints.length === 0) throw new Error('an endpoint rotation needs at least one endpoint');
    this.#endpoints = [...endpoints];
  }

  /** The endpoint the next connect attempt goes to. */
  get current(): TEndpoint {
    // #index stays within the list, which is never empty.
    return this.#endpoints[this.#index] as TEndpoint;
  }

  /** The attempt to {@link current} failed: the next attempt goes to the next endpoint. */
  attemptFailed(): void {
    this.#index = (this.#index + 1) % this.#endpoints.length;
  }
}
