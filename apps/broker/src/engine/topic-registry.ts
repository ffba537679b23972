import { type Clock, DEFAULT_TOPIC_CONFIG, type TopicConfig } from '@ricochet/core';
import { BrokerError, groupOfDlqTopic } from '@ricochet/protocol';
import type { BrokerStore } from '../store/broker-store.js';
import type { StoredMessage, TopicRecord } from '../store/records.js';
import { RecentMessages } from './recent-messages.js';

/** A topic as the engine holds it: its record, the next offset to hand out, its newest messages. */
export interface TopicRuntime {
  readonly name: string;
  record: TopicRecord;
  /** The offset the next appended message gets; every message below has its store write queued. */
  nextOffset: number;
  readonly recent: RecentMessages;
}

/** Topics: their config, their offsets, and whether unknown ones may be created on first use. */
export class TopicRegistry {
  readonly #topics = new Map<string, TopicRuntime>();
  readonly #store: BrokerStore;
  readonly #clock: Clock;
  readonly #autoCreate: boolean;

  constructor(store: BrokerStore, clock: Clock, autoCreate: boolean) {
    this.#store = store;
    this.#clock = clock;
    this.#autoCreate = autoCreate;
  }

  /** Load every topic and recover its next offset from the last stored message. */
  load(): void {
    for (const record of this.#store.listTopics()) {
      const last = this.#store.lastOffset(record.name);
      this.#topics.set(record.name, {
        name: record.name,
        record,
        nextOffset: last === undefined ? 0 : last + 1,
        recent: new RecentMessages(),
      });
    }
  }

  get(name: string): TopicRuntime | undefined {
    return this.#topics.get(name);
  }

  list(): TopicRuntime[] {
    return [...this.#topics.values()];
  }

  /**
   * The topic a send or a subscription names. DLQ topics always exist once named (D1); other
   * unknown topics are created with the default config when auto-creation is on.
   * @throws BrokerError NOT_FOUND when the topic does not exist and may not be created.
   */
  require(name: string): TopicRuntime {
    const existing = this.#topics.get(name);
    if (existing) return existing;
    if (!this.#autoCreate && groupOfDlqTopic(name) === undefined) {
      throw BrokerError.of('NOT_FOUND', `topic "${name}" does not exist`, { topic: name });
    }
    return this.put(name, DEFAULT_TOPIC_CONFIG);
  }

  /** Create a topic or replace its config; its messages and offsets stay. */
  put(name: string, config: TopicConfig): TopicRuntime {
    const existing = this.#topics.get(name);
    const record: TopicRecord = { name, config, createdAt: existing?.record.createdAt ?? this.#clock.now() };
    void this.#store.putTopic(record);
    if (existing) {
      existing.record = record;
      return existing;
    }
    const runtime: TopicRuntime = { name, record, nextOffset: 0, recent: new RecentMessages() };
    this.#topics.set(name, runtime);
    return runtime;
  }

  /**
   * Append a message to a topic's log: the one place where a message gets its offset, where its
   * store write is queued, and where it becomes visible to consumers — in one synchronous step.
   *
   * That step is what keeps the store consistent across a crash (docs/semantics.md, "Nothing
   * stored refers past the stored log"): whatever refers to the message — a cursor that passed it,
   * a delivery state, a history entry, a counter — is written later than the message itself, and
   * the store commits writes in the order they are queued, so it commits with the message or after.
   *
   * @param build makes the message for the offset it is given.
   */
  append(topic: TopicRuntime, build: (offset: number) => StoredMessage): StoredMessage {
    const message = build(topic.nextOffset);
    topic.nextOffset++;
    void this.#store.appendMessage(message);
    topic.recent.append(message);
    return message;
  }

  /**
   * Up to `limit` messages of a topic from `fromOffset` on: the newest from memory (visible before
   * their commit), older ones from the store.
   */
  readLog(topic: string, fromOffset: number, limit: number): StoredMessage[] {
    return (
      this.#topics.get(topic)?.recent.read(fromOffset, limit) ??
      this.#store.readMessages(topic, fromOffset, limit)
    );
  }

  /** One message of a topic, from memory when it is among the newest, else from the store. */
  getMessage(topic: string, offset: number): StoredMessage | undefined {
    return this.#topics.get(topic)?.recent.get(offset) ?? this.#store.getMessage(topic, offset);
  }

  /** Rewrite a stored message in place (a DLQ copy marked redriven), in the store and in memory. */
  rewrite(message: StoredMessage): void {
    void this.#store.appendMessage(message);
    this.#topics.get(message.topic)?.recent.replace(message);
  }
}
