/**
 * The RocketMQ clients this broker serves, by the `x-mq-client-id` every request carries, and the
 * push-consumer leases each holds. A RocketMQ push consumer receives with `auto_renew`: its
 * leases last while the client lives (the proxy renews them while its Telemetry stream is open).
 * Here such a lease is taken for the group's `consumptionTimeoutMs` (P2: past it, the delivery
 * fails), and released when the client goes away (C2: a release is not a failure), so the two
 * rules read as they do for Ricochet's own push consumers.
 *
 * Invariant: a handle is tracked from the receive that leased it until the client settles it (ack,
 * nack by ChangeInvisibleDuration, dead-letter) or goes away; a release of a handle the client
 * settled meanwhile fails harmlessly with INVALID_RECEIPT_HANDLE inside the engine.
 */
export class RocketClients {
  readonly #clients = new Map<string, RocketClient>();
  readonly #release: (receiptHandles: readonly string[]) => void;

  /** `release` hands leases back to the engine (C2), whatever the outcome. */
  constructor(release: (receiptHandles: readonly string[]) => void) {
    this.#release = release;
  }

  /** A Telemetry stream of `clientId` opened: the client is alive while one is. */
  streamOpened(clientId: string): void {
    this.#of(clientId).streams++;
  }

  /** A Telemetry stream of `clientId` ended: with its last one, its push leases are released. */
  streamClosed(clientId: string): void {
    const client = this.#clients.get(clientId);
    if (client === undefined) return;
    client.streams = Math.max(0, client.streams - 1);
    if (client.streams === 0) this.terminated(clientId);
  }

  /** `clientId` said it is shutting down, or went away: release what it still holds. */
  terminated(clientId: string): void {
    const client = this.#clients.get(clientId);
    if (client === undefined) return;
    this.#clients.delete(clientId);
    if (client.leases.size > 0) this.#release([...client.leases]);
  }

  /** Leases a push receive of `clientId` took, held until settled or released. */
  leased(clientId: string, receiptHandles: readonly string[]): void {
    const client = this.#of(clientId);
    for (const handle of receiptHandles) client.leases.add(handle);
  }

  /** The client answered for these handles (ack, nack, dead-letter): they are no longer its to release. */
  settled(clientId: string, receiptHandles: readonly string[]): void {
    const client = this.#clients.get(clientId);
    if (client === undefined) return;
    for (const handle of receiptHandles) client.leases.delete(handle);
  }

  /** Clients with an open Telemetry stream or unsettled push leases. */
  get size(): number {
    return this.#clients.size;
  }

  /** Release every client's leases: the broker is closing. */
  closeAll(): void {
    for (const clientId of [...this.#clients.keys()]) this.terminated(clientId);
  }

  #of(clientId: string): RocketClient {
    let client = this.#clients.get(clientId);
    if (client === undefined) {
      client = { streams: 0, leases: new Set() };
      this.#clients.set(clientId, client);
    }
    return client;
  }
}

interface RocketClient {
  streams: number;
  readonly leases: Set<string>;
}
