import { type Clock, deliverAtOf, topicTypeViolation } from '@ricochet/core';
import {
  BrokerError,
  ERROR_CODES,
  type ErrorName,
  errorNameOf,
  MAX_PROPERTIES_BYTES,
  type OutgoingMessage,
  propertiesByteLength,
  type SendReceipt,
} from '@ricochet/protocol';
import type { BrokerStore } from '../../store/broker-store.js';
import type { StoredMessage } from '../../store/records.js';
import type { BrokerMetrics } from '../broker-metrics.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import { DedupFilter } from './dedup-filter.js';

export interface SendPathDeps {
  readonly store: BrokerStore;
  readonly clock: Clock;
  readonly topics: TopicRegistry;
  readonly metrics: BrokerMetrics;
  /** Messages were appended to a topic: consumers at its head can take them now. */
  readonly onAppended: (topic: string) => void;
  readonly maxBodyBytes: number;
  readonly dedupWindowMs: number;
  readonly maxDelayMs: number;
  /** Throttling (R4): the error to answer instead of storing, or `undefined` to accept. */
  readonly throttle: (topic: string) => BrokerError | undefined;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** One `send` call: what it stored, and the commit that holds it, set once all its writes are queued. */
interface SendBatch {
  readonly stored: StoredMessage[];
  durable: Promise<void>;
}

/** A message stored but not yet durable: a retry of it waits for the same commit. */
interface PendingSend {
  readonly offset: number;
  readonly batch: SendBatch;
}

/** A copy of a pending send, answered once the original's commit is durable. */
interface PendingCopy {
  readonly index: number;
  readonly pending: PendingSend;
}

const COMMITTED = Promise.resolve();

/**
 * The send path (R1, R3): validate each message, answer duplicates with the original receipt,
 * append the rest to their topics' logs, and answer once the commit holding them is durable.
 *
 * Group commit comes from the store: every write queued in one event turn goes into one
 * transaction, and a transaction committed while the previous one is being flushed shares its
 * fsync. The messages are queued the moment they get their offsets (TopicRegistry.append), never
 * held back in memory: anything a consumer does with them is then queued after them, so the store
 * can never commit it first.
 *
 * Dedup (R3) asks the {@link DedupFilter} first. It holds every id this process stored within the
 * window, and every id of a send not yet durable (pinned until its commit), and it is blind
 * (answers "maybe") until the newest message stored by an earlier run has left the window. Only
 * an id it cannot rule out — a retry, or a rare false positive — is looked up: among the sends
 * not yet durable, then in the store's id index. A new id, nearly every send, costs neither.
 */
export class SendPath {
  readonly #deps: SendPathDeps;
  /** Sends whose commit is not yet durable, oldest first. */
  readonly #pendingBatches = new Set<SendBatch>();
  readonly #recentIds: DedupFilter;
  /** Whether the filter was told about the messages an earlier run stored (once the topics are loaded). */
  #earlierRunsCovered = false;

  constructor(deps: SendPathDeps) {
    this.#deps = deps;
    this.#recentIds = new DedupFilter({ windowMs: deps.dedupWindowMs });
  }

  /** Whether a send of this id is stored and not yet durable (its index write still queued). */
  isPending(messageId: string): boolean {
    return this.#pendingOf(messageId, this.#deps.clock.now()) !== undefined;
  }

  /** Store a batch; one receipt per message, in order. Rejects only on a bug (a throw while deciding). */
  async send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    const startedAt = performance.now();
    const nowMs = this.#deps.clock.now();
    this.#coverEarlierRuns();
    const receipts: SendReceipt[] = [];
    // Pending from the start, its commit set below before this call first waits: a second copy of
    // an id within this very batch waits for the first one's commit.
    const batch: SendBatch = { stored: [], durable: COMMITTED };
    const { stored } = batch;
    this.#pendingBatches.add(batch);
    const pin = this.#recentIds.pin(nowMs);
    let copies: PendingCopy[] | undefined;
    try {
      copies = this.#decideAll(messages, nowMs, batch, receipts);
      if (stored.length > 0) {
        // Asked after the writes were queued, so it covers the transaction that holds them.
        batch.durable = this.#deps.store.durable();
        this.#wake(stored);
        let failure: unknown;
        let durable = true;
        try {
          await batch.durable;
        } catch (error) {
          durable = false;
          failure = error;
        }
        this.#countSent(stored);
        if (!durable) this.#failStored(receipts, failure);
      }
    } finally {
      // Whatever happened, the batch is pending no more and its ids may leave the filter in time.
      this.#pendingBatches.delete(batch);
      this.#recentIds.unpin(pin);
    }
    if (copies !== undefined) await this.#answerCopies(copies, messages, receipts);
    this.#deps.metrics.sendLatency((performance.now() - startedAt) / 1_000);
    for (const receipt of receipts) if (!receipt.ok) this.#deps.metrics.rejected(receipt.error.code);
    return receipts;
  }

  /**
   * Decide every message of a batch in order: a receipt for each (a placeholder for a copy of a
   * pending send, returned among the copies), the stored ones appended to `batch.stored`.
   */
  #decideAll(
    messages: readonly OutgoingMessage[],
    nowMs: number,
    batch: SendBatch,
    receipts: SendReceipt[],
  ): PendingCopy[] | undefined {
    let copies: PendingCopy[] | undefined;
    for (let index = 0; index < messages.length; index++) {
      const message = messages[index] as OutgoingMessage;
      const messageId = message.messageId;
      // R3: a retried send reuses its id; answer it with the original receipt, never store twice.
      if (this.#recentIds.mayHold(messageId, nowMs)) {
        const pending = this.#pendingOf(messageId, nowMs);
        if (pending !== undefined) {
          copies ??= [];
          copies.push({ index, pending });
          receipts.push(PLACEHOLDER);
          continue;
        }
        const known = this.#deps.store.locateMessage(messageId);
        if (known && nowMs - known.storedAt < this.#deps.dedupWindowMs) {
          receipts.push({ ok: true, messageId, offset: known.offset, duplicate: true });
          continue;
        }
      }
      const decision = this.#decide(message, nowMs);
      if ('ok' in decision) {
        receipts.push(decision);
        continue;
      }
      batch.stored.push(decision);
      receipts.push({ ok: true, messageId, offset: decision.offset, duplicate: false });
    }
    return copies;
  }

  /**
   * The pending send of an id, if any. Every pending id is in the filter (pinned), so one it rules
   * out costs nothing; the rest are looked for among the pending batches, a few thousand messages.
   */
  #pendingOf(messageId: string, nowMs: number): PendingSend | undefined {
    if (this.#pendingBatches.size === 0 || !this.#recentIds.mayHold(messageId, nowMs)) return undefined;
    for (const batch of this.#pendingBatches) {
      for (const message of batch.stored) {
        if (message.messageId === messageId) return { offset: message.offset, batch };
      }
    }
    return undefined;
  }

  /**
   * Once, at the first send (the topics are loaded by then): ids stored by an earlier run are in
   * the index and not in the filter, so it rules nothing out until the newest of them is past the window.
   */
  #coverEarlierRuns(): void {
    if (this.#earlierRunsCovered) return;
    this.#earlierRunsCovered = true;
    const newest = this.#deps.topics.newestStoredAtMs;
    if (newest !== undefined) this.#recentIds.blindUntil(newest);
  }

  /** Wake each topic the batch appended to once. */
  #wake(stored: readonly StoredMessage[]): void {
    const first = (stored[0] as StoredMessage).topic;
    this.#deps.onAppended(first);
    let others: Set<string> | undefined;
    for (const message of stored) {
      if (message.topic !== first && !others?.has(message.topic)) {
        others ??= new Set();
        others.add(message.topic);
        this.#deps.onAppended(message.topic);
      }
    }
  }

  /**
   * The commit failed: every message this batch stored (a receipt that is ok and no duplicate)
   * failed with it, with the store's own error when it gave one (`503`: it stopped taking writes).
   */
  #failStored(receipts: SendReceipt[], failure: unknown): void {
    const storeName = failure instanceof BrokerError ? errorNameOf(failure.code) : undefined;
    const [name, message]: [ErrorName, string] =
      storeName && failure instanceof BrokerError
        ? [storeName, failure.message]
        : ['INTERNAL_ERROR', 'the store failed to commit the message'];
    for (let index = 0; index < receipts.length; index++) {
      const receipt = receipts[index] as SendReceipt;
      if (receipt.ok && !receipt.duplicate) receipts[index] = failedReceipt(receipt.messageId, name, message);
    }
  }

  /** Answer the copies of pending sends once their originals' commits are durable. */
  async #answerCopies(
    copies: readonly PendingCopy[],
    messages: readonly OutgoingMessage[],
    receipts: SendReceipt[],
  ): Promise<void> {
    for (const { index, pending } of copies) {
      const messageId = (messages[index] as OutgoingMessage).messageId;
      try {
        await pending.batch.durable;
        receipts[index] = { ok: true, messageId, offset: pending.offset, duplicate: true };
      } catch {
        receipts[index] = failedReceipt(
          messageId,
          'INTERNAL_ERROR',
          'the store failed to commit the original message',
        );
      }
    }
  }

  #countSent(stored: readonly StoredMessage[]): void {
    if (stored.length === 0) return;
    const byTopic = new Map<string, number>();
    for (const message of stored) byTopic.set(message.topic, (byTopic.get(message.topic) ?? 0) + 1);
    for (const [topic, count] of byTopic) this.#deps.metrics.messagesSent(topic, count);
  }

  /** A message no duplicate of: its refusal, or the message as stored (and added to the filter). */
  #decide(message: OutgoingMessage, nowMs: number): SendReceipt | StoredMessage {
    const reject = (name: ErrorName, text: string, details?: Record<string, string | number>) =>
      failedReceipt(message.messageId, name, text, details);

    if (message.body.byteLength > this.#deps.maxBodyBytes) {
      return reject(
        'MESSAGE_TOO_LARGE',
        `body is ${message.body.byteLength} bytes; the limit is ${this.#deps.maxBodyBytes}`,
        {
          limitBytes: this.#deps.maxBodyBytes,
        },
      );
    }
    if (message.properties && propertiesByteLength(message.properties) > MAX_PROPERTIES_BYTES) {
      return reject('MESSAGE_TOO_LARGE', `properties exceed ${MAX_PROPERTIES_BYTES} bytes`, {
        limitBytes: MAX_PROPERTIES_BYTES,
      });
    }
    const deliverAt = deliverAtOf(message, nowMs);
    if (deliverAt !== undefined && deliverAt - nowMs > this.#deps.maxDelayMs) {
      return reject(
        'BAD_REQUEST',
        `the delay reaches ${deliverAt - nowMs} ms ahead; the limit is ${this.#deps.maxDelayMs} ms`,
      );
    }

    let topic: ReturnType<TopicRegistry['require']>;
    try {
      topic = this.#deps.topics.require(message.topic);
    } catch (error) {
      if (error instanceof BrokerError) return errorReceipt(message.messageId, error);
      throw error;
    }
    const topicType = topic.record.config.type;
    const mismatch = topicTypeViolation(topicType, message);
    if (mismatch) return reject('TOPIC_TYPE_MISMATCH', mismatch.message, { topic: message.topic, topicType });
    const throttled = this.#deps.throttle(message.topic);
    if (throttled) return errorReceipt(message.messageId, throttled);

    // Built field by field: this runs once per message on the hot path, where conditional
    // spreads would allocate a throwaway object per absent field.
    const stored = this.#deps.topics.append(topic, (offset) => {
      const built: Mutable<StoredMessage> = {
        messageId: message.messageId,
        topic: message.topic,
        offset,
        body: message.body,
        bornAt: message.bornAt,
        storedAt: nowMs,
      };
      if (message.tag !== undefined) built.tag = message.tag;
      if (message.keys !== undefined) built.keys = message.keys;
      if (message.messageGroup !== undefined) built.messageGroup = message.messageGroup;
      if (message.properties !== undefined) built.properties = message.properties;
      if (deliverAt !== undefined && deliverAt > nowMs) built.deliverAt = deliverAt;
      return built;
    });
    void this.#deps.store.putMessageLocation(stored.messageId, {
      topic: stored.topic,
      offset: stored.offset,
      storedAt: stored.storedAt,
    });
    this.#recentIds.add(stored.messageId, nowMs);
    return stored;
  }
}

/** Holds the place of a copy's receipt until its original is durable; never returned. */
const PLACEHOLDER: SendReceipt = { ok: true, messageId: '', offset: -1, duplicate: true };

function failedReceipt(
  messageId: string,
  name: ErrorName,
  message: string,
  details?: Record<string, string | number>,
): SendReceipt {
  return {
    ok: false,
    messageId,
    error: { code: ERROR_CODES[name].code, message, ...(details === undefined ? {} : { details }) },
  };
}

function errorReceipt(messageId: string, error: BrokerError): SendReceipt {
  return {
    ok: false,
    messageId,
    error: {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
    },
  };
}
