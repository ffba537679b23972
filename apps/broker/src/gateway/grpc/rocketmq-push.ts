import type { Clock } from '@ricochet/core';
import type { DeliveredMessage } from '@ricochet/protocol';
import type { MessagingService } from '../../engine/index.js';

/**
 * How long a push consumer without a Telemetry stream may go without receiving before the broker
 * takes it for gone: well past a receive's long poll plus the clients' 3 s request timeout.
 */
export const SILENT_CLIENT_MS = 3 * 60 * 1_000;

/**
 * RocketMQ push consumers as what they are in Ricochet's terms: push consumers (P1–P5, C2).
 *
 * A RocketMQ push consumer fetches with long-polling `ReceiveMessage` calls marked `auto_renew`,
 * acks with `AckMessage` and nacks with `ChangeInvisibleDuration(backoff)`; its leases live as
 * long as the client (the RocketMQ proxy renews them while its Telemetry stream is open). Here
 * each (client, group, topic) it receives on is one push subscription of the engine, fed into a
 * small buffer: a receive takes what the subscription delivered, waiting for it up to the poll,
 * and hands the engine credit for what the last receive took, so the engine never streams more
 * than one batch ahead of what the client asked for. Its deliveries are push deliveries, so the
 * engine applies P2's consumption timeout, P3/P4's retries and DLQ on a nack, and C2's release
 * when the client goes away (its last Telemetry stream ends, or it says it terminates).
 *
 * Invariant: a handle is in {@link #owners} from the receive that handed it out until the client
 * settles it or goes away; only those handles are push deliveries to this front door.
 */
export class RocketPushConsumers {
  readonly #engine: MessagingService;
  readonly #clients = new Map<string, PushClient>();
  /** Receipt handles of push deliveries handed out, and the client they went to. */
  readonly #owners = new Map<string, string>();

  /** Ends the clients that went silent; see {@link SILENT_CLIENT_MS}. */
  readonly #sweep: NodeJS.Timeout;

  readonly #clock: Clock;

  constructor(engine: MessagingService, clock: Clock) {
    this.#engine = engine;
    this.#clock = clock;
    this.#sweep = setInterval(() => this.endSilentClients(), SILENT_CLIENT_MS / 2);
    this.#sweep.unref();
  }

  /** A Telemetry stream of `clientId` opened: the client lives while one is open. */
  streamOpened(clientId: string): void {
    this.#clientOf(clientId).streams++;
  }

  /** A Telemetry stream of `clientId` ended; with its last one, the client is gone. */
  streamClosed(clientId: string): void {
    const client = this.#clients.get(clientId);
    if (client === undefined) return;
    client.streams = Math.max(0, client.streams - 1);
    if (client.streams === 0) this.terminated(clientId);
  }

  /**
   * `clientId` went away or said it terminates: its subscriptions end, and the engine releases
   * every delivery they still hold, handed out or buffered (C2: a release is not a failure).
   */
  terminated(clientId: string): void {
    const client = this.#clients.get(clientId);
    if (client === undefined) return;
    this.#clients.delete(clientId);
    const ids: number[] = [];
    for (const feed of client.feeds.values()) {
      feed.ended = true;
      for (const waiter of feed.waiters.splice(0)) waiter();
      if (feed.subscriptionId !== undefined) ids.push(feed.subscriptionId);
    }
    for (const [handle, owner] of this.#owners) if (owner === clientId) this.#owners.delete(handle);
    if (ids.length > 0) this.#engine.endSubscriptions(ids);
  }

  /** Whether `receiptHandle` is a push delivery this front door handed out (a nack is then a failure, P2). */
  isPushDelivery(receiptHandle: string): boolean {
    return this.#owners.has(receiptHandle);
  }

  /** The client answered for these handles (ack, nack, dead-letter). */
  settled(receiptHandles: readonly string[]): void {
    for (const handle of receiptHandles) this.#owners.delete(handle);
  }

  /**
   * Up to `maxMessages` push deliveries of `group` on `topic` for `clientId`, waiting up to
   * `awaitDurationMs` for the first; `signal` answers at once with what there is.
   */
  async receive(request: PushReceive): Promise<DeliveredMessage[]> {
    const client = this.#clientOf(request.clientId);
    client.lastReceiveMs = this.#clock.now();
    const feed = await this.#feedOf(client, request);
    if (feed.subscriptionId !== undefined && feed.handedOut > 0) {
      // The client took `handedOut` last time: the engine may deliver as many again.
      this.#engine.credit(feed.subscriptionId, feed.handedOut);
      feed.handedOut = 0;
    }
    if (feed.buffer.length === 0 && request.awaitDurationMs > 0 && !request.signal.aborted && !feed.ended) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, request.awaitDurationMs);
        function done(): void {
          clearTimeout(timer);
          request.signal.removeEventListener('abort', done);
          resolve();
        }
        feed.waiters.push(done);
        request.signal.addEventListener('abort', done, { once: true });
      });
    }
    // A receive that ended while it waited (the client cancelled it) takes nothing: what arrived
    // stays buffered for the next one, never handed to a call nobody listens to.
    if (request.signal.aborted) return [];
    const taken = feed.buffer.splice(0, request.maxMessages);
    feed.handedOut += taken.length;
    for (const message of taken) this.#owners.set(message.receiptHandle, request.clientId);
    return taken;
  }

  /** Every client is gone: the broker is closing. */
  closeAll(): void {
    clearInterval(this.#sweep);
    for (const clientId of [...this.#clients.keys()]) this.terminated(clientId);
  }

  /**
   * The official clients keep a Telemetry stream open while they live. A client that never opened
   * one (or whose last one ended without being noticed) and has not received for
   * {@link SILENT_CLIENT_MS} is gone as far as the broker can tell: its subscriptions end and its
   * deliveries are released (C2), so an abandoned client holds nothing for a consumption timeout.
   */
  endSilentClients(): void {
    const nowMs = this.#clock.now();
    for (const [clientId, client] of this.#clients) {
      if (client.streams === 0 && nowMs - client.lastReceiveMs > SILENT_CLIENT_MS) this.terminated(clientId);
    }
  }

  async #feedOf(client: PushClient, request: PushReceive): Promise<PushFeed> {
    const key = `${request.group}\u0000${request.topic}`;
    const existing = client.feeds.get(key);
    if (existing !== undefined && existing.expression === request.expression) {
      await existing.ready;
      return existing;
    }
    if (existing?.subscriptionId !== undefined) this.#engine.endSubscriptions([existing.subscriptionId]);
    const feed: PushFeed = {
      expression: request.expression,
      buffer: [],
      waiters: [],
      handedOut: 0,
      ended: false,
      subscriptionId: undefined,
      ready: Promise.resolve(),
    };
    feed.ready = (async () => {
      feed.subscriptionId = await this.#engine.subscribe({
        group: request.group,
        subscriptions: { [request.topic]: request.expression },
        maxCachedMessages: request.maxMessages,
        consumerId: request.clientId,
        clientId: request.clientId,
        sink: (_subscriptionId, messages) => {
          feed.buffer.push(...messages);
          for (const waiter of feed.waiters.splice(0)) waiter();
        },
      });
      // The client went away while the subscription was being made: nothing else will end it.
      if (feed.ended) this.#engine.endSubscriptions([feed.subscriptionId]);
    })();
    client.feeds.set(key, feed);
    try {
      await feed.ready;
    } catch (error) {
      client.feeds.delete(key);
      throw error;
    }
    return feed;
  }

  #clientOf(clientId: string): PushClient {
    let client = this.#clients.get(clientId);
    if (client === undefined) {
      client = { streams: 0, lastReceiveMs: this.#clock.now(), feeds: new Map() };
      this.#clients.set(clientId, client);
    }
    return client;
  }
}

export interface PushReceive {
  readonly clientId: string;
  readonly group: string;
  readonly topic: string;
  /** The tag filter, `*` or `a || b`. */
  readonly expression: string;
  readonly maxMessages: number;
  readonly awaitDurationMs: number;
  readonly signal: AbortSignal;
}

interface PushClient {
  streams: number;
  /** When it last received: how a client without a Telemetry stream is seen to live. */
  lastReceiveMs: number;
  /** One per (group, topic) the client receives on. */
  readonly feeds: Map<string, PushFeed>;
}

/** One push subscription of the engine, and what it delivered that no receive took yet. */
interface PushFeed {
  readonly expression: string;
  readonly buffer: DeliveredMessage[];
  /** Receives waiting for a delivery. */
  readonly waiters: (() => void)[];
  /** Deliveries the last receives took, not yet given back to the engine as credit. */
  handedOut: number;
  ended: boolean;
  subscriptionId: number | undefined;
  /** Settles once the subscription is made. */
  ready: Promise<void>;
}
