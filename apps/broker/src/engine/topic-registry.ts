import { type Clock, DEFAULT_TOPIC_CONFIG, resolveTopicConfig, type TopicConfig } from '@ricochet/core';
import { BrokerError, groupOfDlqTopic } from '@ricochet/protocol';
import type { BrokerStore } from '../store/broker-store.js';
import type { StoredMessage, TopicRecord } from '../store/records.js';
import { RecentMessages } from './recent-messages.js';

/** A topic as the engine holds it: its record, its retained offsets, its newest messages. */
export interface TopicRuntime {
  readonly name: string;
  record: TopicRecord;
  /** The lowest offset retention kept: every message below it is deleted (DESIGN.md §5). */
  firstOffset: number;
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

  /**
   * Load every topic and recover its next offset from the last stored message — or from the first
   * offset retention kept, when every message expired: offsets are never handed out twice.
   */
  load(): void {
    for (const stored of this.#store.listTopics()) {
      // Configs stored before retention existed take its default.
      const record: TopicRecord = { ...stored, config: resolveTopicConfig(stored.config) };
      const firstOffset = record.firstOffset ?? 0;
      const last = this.#store.lastOffset(record.name);
      this.#topics.set(record.name, {
        name: record.name,
        record,
        firstOffset,
        nextOffset: Math.max(firstOffset, last === undefined ? 0 : last + 1),
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
    const record: TopicRecord = {
      name,
      config: resolveTopicConfig(config),
      createdAt: existing?.record.createdAt ?? this.#clock.now(),
      ...(existing?.record.firstOffset === undefined ? {} : { firstOffset: existing.record.firstOffset }),
    };
    void this.#store.putTopic(record);
    if (existing) {
      existing.record = record;
      return existing;
    }
    const runtime: TopicRuntime = {
      name,
      record,
      firstOffset: 0,
      nextOffset: 0,
      recent: new RecentMessages(),
    };
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
    const runtime = this.#topics.get(topic);
    // Below the first retained offset the store may still show deletions not committed yet.
    const from = Math.max(fromOffset, runtime?.firstOffset ?? 0);
    return runtime?.recent.read(from, limit) ?? this.#store.readMessages(topic, from, limit);
  }

  /** One message of a topic, from memory when it is among the newest, else from the store. */
  getMessage(topic: string, offset: number): StoredMessage | undefined {
    const runtime = this.#topics.get(topic);
    if (runtime && offset < runtime.firstOffset) return undefined;
    return runtime?.recent.get(offset) ?? this.#store.getMessage(topic, offset);
  }

  /** Whether retention deleted this offset of the topic. */
  isExpired(topic: string, offset: number): boolean {
    return offset < (this.#topics.get(topic)?.firstOffset ?? 0);
  }

  /**
   * Retention deleted every message of `topic` below `firstOffset`: forget them in memory too, and
   * queue the topic record that remembers the new first offset — in the caller's turn, so it
   * commits with the deletions.
   */
  expireBefore(topic: TopicRuntime, firstOffset: number): void {
    if (firstOffset <= topic.firstOffset) return;
    topic.firstOffset = firstOffset;
    topic.nextOffset = Math.max(topic.nextOffset, firstOffset);
    topic.recent.dropBefore(firstOffset);
    topic.record = { ...topic.record, firstOffset };
    void this.#store.putTopic(topic.record);
  }

  /** Rewrite a stored message in place (a DLQ copy marked redriven), in the store and in memory. */
  rewrite(message: StoredMessage): void {
    void this.#store.appendMessage(message);
    this.#topics.get(message.topic)?.recent.replace(message);
  }
}
