import { Producer } from '@ricochet/producer';
import { ConsumeResult, type ConsumeResultValue, PushConsumer } from '@ricochet/push-consumer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import type { GroupObservation, RetryObservation } from './accounting.js';

export const SOAK_TOPIC = 'soak';
/** Push group whose listener always succeeds. */
export const PUSH_GROUP = 'soak-push';
/** Simple-consumer group: receive, then ack every message. */
export const SIMPLE_GROUP = 'soak-simple';
/** Push group that fails some messages: `flaky` once, `poison` until it is redriven from the DLQ. */
export const RETRY_GROUP = 'soak-retry';
/** The retry group's fixed retry delay and its maxRetries: a poison message is dead-lettered after 3 failures. */
export const RETRY_DELAY_MS = 500;
export const MAX_RETRIES = 2;

const PRODUCERS = 4;
/** Sends each producer keeps in flight, each awaited: enough to keep the broker's group commit busy. */
const SENDS_IN_FLIGHT = 16;
const FAST_RECONNECT = { initialMs: 20, maxMs: 200, minConnectTimeoutMs: 2_000 } as const;
/** Every 10th message fails once in the retry group; every 50th fails until redriven. */
const kindOf = (i: number) => (i % 50 === 0 ? 'poison' : i % 10 === 0 ? 'flaky' : 'ok');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One group's running tally, turned into a {@link GroupObservation} at the end. */
class GroupTally {
  deliveries = 0;
  requestedRedeliveries = 0;
  readonly offsetsById = new Map<string, Set<number>>();

  constructor(readonly name: string) {}

  delivered(messageId: string, offset: number): void {
    this.deliveries++;
    const offsets = this.offsetsById.get(messageId);
    if (offsets) offsets.add(offset);
    else this.offsetsById.set(messageId, new Set([offset]));
  }

  observation(stats: Record<string, number>): GroupObservation {
    return {
      name: this.name,
      deliveries: this.deliveries,
      offsetsById: this.offsetsById,
      requestedRedeliveries: this.requestedRedeliveries,
      stats,
    };
  }
}

/**
 * The soak's traffic, on the endpoints of brokers that come and go: producers sending as fast
 * as awaited sends allow, two push groups and a simple-consumer group reading the same topic, and
 * a redriver sending the retry group's dead letters back. Clients reconnect by themselves.
 */
export class SoakLoad {
  readonly acknowledged = new Map<string, number>();
  sent = 0;
  failedSends = 0;
  readonly retries: RetryObservation[] = [];
  readonly push = new GroupTally(PUSH_GROUP);
  readonly simple = new GroupTally(SIMPLE_GROUP);
  readonly retry = new GroupTally(RETRY_GROUP);
  /** Poison messages the redriver sent back: from then on the retry group's listener accepts them. */
  readonly #redriven = new Set<string>();
  /** The retry group's last failure of each message it will retry: attempt and when. */
  readonly #lastFailure = new Map<string, { attempt: number; atMs: number }>();
  readonly #endpoints: readonly string[];
  readonly #httpBases: readonly string[];
  #sending = true;
  #consuming = true;
  readonly #producers: Producer[];
  readonly #pushConsumers: PushConsumer[];
  readonly #simpleConsumer: SimpleConsumer;
  #senders: Promise<void>[] = [];
  #tasks: Promise<void>[] = [];
  #stopping: Promise<void> | undefined;

  /** `endpoints`: the one broker's, or every broker's on a shared store (clients fail over between them). */
  constructor(endpoints: readonly string[]) {
    this.#endpoints = endpoints;
    this.#httpBases = endpoints.map((endpoint) => endpoint.replace(/^ws/, 'http'));
    const endpoint = [...endpoints];
    this.#producers = Array.from(
      { length: PRODUCERS },
      () =>
        new Producer({
          endpoint,
          maxAttempts: 10,
          requestTimeoutMs: 5_000,
          reconnectBackoff: FAST_RECONNECT,
        }),
    );
    this.#pushConsumers = [
      new PushConsumer({
        endpoint,
        group: PUSH_GROUP,
        subscriptions: { [SOAK_TOPIC]: '*' },
        reconnectBackoff: FAST_RECONNECT,
        onError: () => {},
        listener: (message) => {
          this.push.delivered(message.messageId, message.offset);
          return ConsumeResult.SUCCESS;
        },
      }),
      new PushConsumer({
        endpoint,
        group: RETRY_GROUP,
        subscriptions: { [SOAK_TOPIC]: '*' },
        reconnectBackoff: FAST_RECONNECT,
        onError: () => {},
        listener: (message) => this.#retryListener(message),
      }),
    ];
    this.#simpleConsumer = new SimpleConsumer({
      endpoint,
      group: SIMPLE_GROUP,
      subscriptions: { [SOAK_TOPIC]: '*' },
      awaitDurationMs: 1_000,
      requestTimeoutMs: 5_000,
      reconnectBackoff: FAST_RECONNECT,
    });
  }

  /** Create the groups (as the admin API does) and start every client and loop. */
  async start(): Promise<void> {
    await this.#putGroup(PUSH_GROUP, { startFrom: 'earliest' });
    await this.#putGroup(SIMPLE_GROUP, { startFrom: 'earliest' });
    await this.#putGroup(RETRY_GROUP, {
      startFrom: 'earliest',
      maxRetries: MAX_RETRIES,
      retryPolicy: { type: 'fixed', delayMs: RETRY_DELAY_MS },
    });
    await Promise.all(this.#pushConsumers.map((consumer) => consumer.start()));
    await this.#simpleConsumer.start();
    this.#senders = this.#producers.flatMap((producer, index) =>
      Array.from({ length: SENDS_IN_FLIGHT }, (_, lane) => this.#sendLoop(producer, `${index}.${lane}`)),
    );
    this.#tasks = [this.#simpleLoop(), this.#redriveLoop()];
  }

  /** Stop sending; resolves when every producer's last send settled. */
  async stopSending(): Promise<void> {
    this.#sending = false;
    await Promise.all(this.#senders);
    await Promise.all(this.#producers.map((producer) => producer.close()));
  }

  /** Stop consuming and redriving; resolves when every loop ended and every consumer closed. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.stopSending();
      this.#consuming = false;
      await Promise.all(this.#pushConsumers.map((consumer) => consumer.close()));
      await this.#simpleConsumer.close();
      await Promise.all(this.#tasks);
    })();
    return this.#stopping;
  }

  async #sendLoop(producer: Producer, lane: string): Promise<void> {
    for (let i = 0; this.#sending && i < 100_000_000; i++) {
      this.sent++;
      try {
        const kind = kindOf(i);
        const { messageId, offset } = await producer.send({
          topic: SOAK_TOPIC,
          tag: kind,
          body: `lane ${lane} message ${i}`,
        });
        this.acknowledged.set(messageId, offset);
      } catch {
        this.failedSends++;
      }
    }
  }

  #retryListener(message: {
    messageId: string;
    offset: number;
    tag: string | undefined;
    deliveryAttempt: number;
  }): ConsumeResultValue {
    const now = performance.now();
    this.retry.delivered(message.messageId, message.offset);
    const previous = this.#lastFailure.get(message.messageId);
    if (previous) {
      this.#lastFailure.delete(message.messageId);
      // Only the next attempt is a retry of that failure; the same attempt again is a release.
      if (message.deliveryAttempt === previous.attempt + 1)
        this.retries.push({ failedAtMs: previous.atMs, delayMs: RETRY_DELAY_MS, redeliveredAtMs: now });
    }
    const fails =
      (message.tag === 'flaky' && message.deliveryAttempt === 1) ||
      (message.tag === 'poison' && !this.#redriven.has(message.messageId));
    if (!fails) return ConsumeResult.SUCCESS;
    this.retry.requestedRedeliveries++;
    // The failure of attempt maxRetries + 1 dead-letters the message (P4): no retry to time.
    if (message.deliveryAttempt <= MAX_RETRIES)
      this.#lastFailure.set(message.messageId, { attempt: message.deliveryAttempt, atMs: now });
    return ConsumeResult.FAILURE;
  }

  async #simpleLoop(): Promise<void> {
    while (this.#consuming) {
      try {
        const messages = await this.#simpleConsumer.receive(32, 5_000);
        for (const message of messages) this.simple.delivered(message.messageId, message.offset);
        // An ack lost in a crash leaves the lease to expire: the message comes again (counted).
        await Promise.all(messages.map((message) => this.#simpleConsumer.ack(message).catch(() => {})));
      } catch {
        if (this.#consuming) await sleep(50);
      }
    }
  }

  /** Every second: list the retry group's DLQ and redrive what is there, by id. */
  async #redriveLoop(): Promise<void> {
    while (this.#consuming) {
      await sleep(1_000);
      try {
        const response = await this.#admin(`/v1/groups/${RETRY_GROUP}/dlq?limit=1000`);
        if (!response.ok) continue;
        const { messages } = (await response.json()) as { messages: { messageId: string }[] };
        if (messages.length === 0) continue;
        const messageIds = messages.map(({ messageId }) => messageId);
        for (const messageId of messageIds) this.#redriven.add(messageId);
        await this.#admin(`/v1/groups/${RETRY_GROUP}/dlq/redrive`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ messageIds, ratePerSecond: 5_000 }),
        });
      } catch {
        // The broker is down; the next round tries again.
      }
    }
  }

  /** A group's stats from the admin API. */
  async stats(group: string): Promise<Record<string, number>> {
    const response = await this.#admin(`/v1/groups/${group}`);
    return ((await response.json()) as { stats: Record<string, number> }).stats;
  }

  /**
   * The admin API through the first broker that answers: any broker on a shared store forwards it
   * to the owner; one that is down, or a standby while no broker owns the store (503), is skipped.
   */
  async #admin(path: string, init?: RequestInit): Promise<Response> {
    let last: unknown;
    for (const base of this.#httpBases) {
      try {
        const response = await fetch(`${base}${path}`, init);
        if (response.status !== 503) return response;
        last = new Error(`${base}${path}: 503 ${await response.text()}`);
      } catch (error) {
        last = error;
      }
    }
    throw last;
  }

  async #putGroup(group: string, config: Record<string, unknown>): Promise<void> {
    const response = await this.#admin(`/v1/groups/${group}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(config),
    });
    if (!response.ok) throw new Error(`PUT group ${group}: ${response.status} ${await response.text()}`);
  }

  get endpoints(): readonly string[] {
    return this.#endpoints;
  }
}
