import { type Clock, DEFAULT_TOPIC_CONFIG, resolveTopicConfig, type TopicConfig } from '@ricochet/core';
import { BrokerError, groupOfDlqTopic } from '@ricochet/protocol';
import type { BrokerStore } from '../../store/broker-store.js';
import type { StoredMessage, TopicRecord } from '../../store/records.js';
import { NameOrder, type NamePage } from './name-order.js';
import { RecentMessages } from './recent-messages.js';
import { RestartHorizon } from './restart-horizon.js';
import { RetainedRange } from './retained-range.js';

/** A topic as the engine holds it: its record, its retained offsets, its newest messages. */
export interface TopicRuntime {
  readonly name: string;
  record: TopicRecord;
  /** What retention deleted and kept (DESIGN.md §5). */
  readonly retained: RetainedRange;
  /** The offset the next appended message gets; every message below has its store write queued. */
  nextOffset: number;
  readonly recent: RecentMessages;
}

/** Topics: their config, their offsets, and whether unknown ones may be created on first use. */
export class TopicRegistry {
  readonly #topics = new Map<string, TopicRuntime>();
  readonly #byName = new NameOrder<TopicRuntime>();
  readonly #store: BrokerStore;
  readonly #clock: Clock;
  readonly #autoCreate: boolean;
  #newestStoredAtMs: number | undefined;
  /** Each topic's last stored offset when {@link load} ran: what a past life of the broker stored. */
  readonly restartHorizon = new RestartHorizon();

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
      const retained = this.#loadRetained(record);
      const last = this.#store.lastOffset(record.name);
      if (last !== undefined) this.restartHorizon.set(record.name, last);
      const storedAt = last === undefined ? undefined : this.#store.getMessage(record.name, last)?.storedAt;
      if (storedAt !== undefined)
        this.#newestStoredAtMs = Math.max(storedAt, this.#newestStoredAtMs ?? storedAt);
      this.#add({
        name: record.name,
        record,
        retained,
        nextOffset: Math.max(retained.expiredBelow, last === undefined ? 0 : last + 1),
        recent: new RecentMessages(),
      });
    }
  }

  /** Retention's frontier and the survivors below it: the messages stored between the two offsets it wrote. */
  #loadRetained(record: TopicRecord): RetainedRange {
    const expiredBelow = record.expiredBelow ?? 0;
    const survivors: number[] = [];
    let from = record.firstOffset ?? expiredBelow;
    for (let guard = 0; guard < 1_000_000 && from < expiredBelow; guard++) {
      const batch = this.#store.readMessages(record.name, from, 1_024);
      for (const message of batch) if (message.offset < expiredBelow) survivors.push(message.offset);
      const last = batch.at(-1);
      if (!last) break;
      from = last.offset + 1;
    }
    return new RetainedRange(expiredBelow, survivors);
  }

  /**
   * When the newest message stored before {@link load} was stored (its `storedAt`, the newest of
   * each topic's last message), or `undefined` when there was none: what an earlier run of the
   * broker may have indexed for dedup (R3).
   */
  get newestStoredAtMs(): number | undefined {
    return this.#newestStoredAtMs;
  }

  get(name: string): TopicRuntime | undefined {
    return this.#topics.get(name);
  }

  list(): TopicRuntime[] {
    return [...this.#topics.values()];
  }

  /** Up to `limit` topics named after `afterName` (from the first when `undefined`), by name. */
  page(afterName: string | undefined, limit: number): NamePage<TopicRuntime> {
    return this.#byName.page(afterName, limit);
  }

  #add(runtime: TopicRuntime): TopicRuntime {
    this.#topics.set(runtime.name, runtime);
    this.#byName.add(runtime);
    return runtime;
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
      ...retainedFields(existing?.record),
    };
    void this.#store.putTopic(record);
    if (existing) {
      existing.record = record;
      return existing;
    }
    return this.#add({
      name,
      record,
      retained: new RetainedRange(),
      nextOffset: 0,
      recent: new RecentMessages(),
    });
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
    const written = this.#store.appendMessage(message);
    topic.recent.append(message, { atMs: this.#clock.now(), written });
    return message;
  }

  /**
   * Up to `limit` messages of a topic from `fromOffset` on: the newest from memory (visible before
   * their commit), older ones from the store.
   */
  readLog(topic: string, fromOffset: number, limit: number): StoredMessage[] {
    const runtime = this.#topics.get(topic);
    if (!runtime) return this.#store.readMessages(topic, fromOffset, limit);
    const { retained } = runtime;
    const from = Math.max(fromOffset, retained.firstOffset);
    const readFrom = (offset: number, count: number) =>
      runtime.recent.read(offset, count) ?? this.#store.readMessages(topic, offset, count);
    if (from >= retained.expiredBelow) return readFrom(from, limit);
    // Below the frontier only the survivors are left: known by offset, read one by one.
    const messages: StoredMessage[] = [];
    for (const offset of retained.survivors) {
      if (offset < from) continue;
      if (messages.length >= limit) return messages;
      const message = runtime.recent.get(offset) ?? this.#store.getMessage(topic, offset);
      if (message) messages.push(message);
    }
    return messages.length >= limit
      ? messages
      : [...messages, ...readFrom(retained.expiredBelow, limit - messages.length)];
  }

  /** One message of a topic, from memory when it is among the newest, else from the store. */
  getMessage(topic: string, offset: number): StoredMessage | undefined {
    const runtime = this.#topics.get(topic);
    if (runtime?.retained.isDeleted(offset)) return undefined;
    return runtime?.recent.get(offset) ?? this.#store.getMessage(topic, offset);
  }

  /** Whether retention deleted this offset of the topic. */
  isExpired(topic: string, offset: number): boolean {
    return this.#topics.get(topic)?.retained.isDeleted(offset) ?? false;
  }

  /**
   * Retention deleted messages of `topic`: every one below `expiredBelow` but `kept` (scanned now,
   * held by a group), and the survivors in `released`. Forget them in memory too, and queue the
   * topic record that remembers the range — in the caller's turn, so it commits with the deletions.
   */
  expire(
    topic: TopicRuntime,
    change: {
      readonly expiredBelow?: number;
      readonly kept?: readonly number[];
      readonly released?: readonly number[];
    },
  ): void {
    const { retained } = topic;
    for (const offset of change.released ?? []) retained.release(offset);
    if (change.expiredBelow !== undefined) retained.advance(change.expiredBelow, change.kept ?? []);
    topic.nextOffset = Math.max(topic.nextOffset, retained.expiredBelow);
    // Not past the survivors: one not yet committed is still read from memory.
    topic.recent.dropBefore(retained.firstOffset);
    topic.record = {
      ...topic.record,
      firstOffset: retained.firstOffset,
      expiredBelow: retained.expiredBelow,
    };
    void this.#store.putTopic(topic.record);
  }

  /** Rewrite a stored message in place (a DLQ copy marked redriven), in the store and in memory. */
  rewrite(message: StoredMessage): void {
    void this.#store.appendMessage(message);
    this.#topics.get(message.topic)?.recent.replace(message);
  }
}

/** The retention fields of a stored topic record, carried over when its config is replaced. */
function retainedFields(record: TopicRecord | undefined): Pick<TopicRecord, 'firstOffset' | 'expiredBelow'> {
  if (record?.expiredBelow === undefined) return {};
  return { firstOffset: record.firstOffset ?? record.expiredBelow, expiredBelow: record.expiredBelow };
}
