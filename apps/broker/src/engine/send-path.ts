import { type Clock, deliverAtOf, topicTypeViolation } from '@ricochet/core';
import {
  BrokerError,
  ERROR_CODES,
  type ErrorName,
  MAX_PROPERTIES_BYTES,
  type OutgoingMessage,
  propertiesByteLength,
  type SendReceipt,
} from '@ricochet/protocol';
import type { BrokerStore } from '../store/broker-store.js';
import type { StoredMessage } from '../store/records.js';
import type { BrokerMetrics } from './broker-metrics.js';
import type { TopicRegistry } from './topic-registry.js';

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

/** A message stored but not yet durable: a retry of it waits for the same commit. */
interface PendingSend {
  readonly offset: number;
  readonly durable: Promise<void>;
}

/** What the send path decided for one message of a batch. */
type Decision =
  | { readonly kind: 'answered'; readonly receipt: SendReceipt }
  | { readonly kind: 'stored'; readonly message: StoredMessage }
  | { readonly kind: 'duplicateOfPending'; readonly pending: PendingSend };

/**
 * The send path (R1, R3): validate each message, answer duplicates with the original receipt,
 * append the rest to their topics' logs, and answer once the commit holding them is durable.
 *
 * Group commit comes from the store: every write queued in one event turn goes into one
 * transaction, and a transaction committed while the previous one is being flushed shares its
 * fsync. The messages are queued the moment they get their offsets (TopicRegistry.append), never
 * held back in memory: anything a consumer does with them is then queued after them, so the store
 * can never commit it first.
 */
export class SendPath {
  readonly #deps: SendPathDeps;
  /** Sends stored but not yet durable, by message id. */
  readonly #pending = new Map<string, PendingSend>();

  constructor(deps: SendPathDeps) {
    this.#deps = deps;
  }

  /** Whether a send of this id is stored and not yet durable (its index write still queued). */
  isPending(messageId: string): boolean {
    return this.#pending.has(messageId);
  }

  /** Store a batch; one receipt per message, in order. Never rejects. */
  async send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    const startedAt = performance.now();
    const nowMs = this.#deps.clock.now();
    const decisions: Decision[] = [];
    const stored: StoredMessage[] = [];
    // The batch's durable commit exists as a promise before the first message is decided, so a
    // second copy of an id within this very batch waits for the first one's commit.
    let commitBatch: (commit: Promise<void>) => void = () => {};
    const durable = new Promise<void>((resolve, reject) => {
      commitBatch = (commit) => commit.then(resolve, reject);
    });
    for (const message of messages) {
      const decision = this.#decide(message, nowMs);
      decisions.push(decision);
      if (decision.kind !== 'stored') continue;
      stored.push(decision.message);
      this.#pending.set(decision.message.messageId, { offset: decision.message.offset, durable });
    }
    // Asked after the writes were queued, so it covers the transaction that holds them.
    commitBatch(stored.length > 0 ? this.#deps.store.durable() : Promise.resolve());
    for (const topic of new Set(stored.map((message) => message.topic))) this.#deps.onAppended(topic);
    const stores = await durable.then(
      () => true,
      () => false,
    );
    for (const message of stored) {
      if (this.#pending.get(message.messageId)?.durable === durable) this.#pending.delete(message.messageId);
    }
    this.#countSent(stored);
    const receipts = await Promise.all(
      decisions.map((decision, index) => this.#receiptOf(decision, messages[index]?.messageId ?? '', stores)),
    );
    this.#deps.metrics.sendLatency((performance.now() - startedAt) / 1_000);
    for (const receipt of receipts) if (!receipt.ok) this.#deps.metrics.rejected(receipt.error.code);
    return receipts;
  }

  async #receiptOf(decision: Decision, messageId: string, stored: boolean): Promise<SendReceipt> {
    switch (decision.kind) {
      case 'answered':
        return decision.receipt;
      case 'stored':
        return stored
          ? { ok: true, messageId, offset: decision.message.offset, duplicate: false }
          : failedReceipt(messageId, 'INTERNAL_ERROR', 'the store failed to commit the message');
      case 'duplicateOfPending':
        try {
          await decision.pending.durable;
          return { ok: true, messageId, offset: decision.pending.offset, duplicate: true };
        } catch {
          return failedReceipt(
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

  #decide(message: OutgoingMessage, nowMs: number): Decision {
    const reject = (name: ErrorName, text: string, details?: Record<string, string | number>): Decision => ({
      kind: 'answered',
      receipt: failedReceipt(message.messageId, name, text, details),
    });

    // R3: a retried send reuses its id; answer it with the original receipt, never store twice.
    const pending = this.#pending.get(message.messageId);
    if (pending) return { kind: 'duplicateOfPending', pending };
    const known = this.#deps.store.locateMessage(message.messageId);
    if (known && nowMs - known.storedAt < this.#deps.dedupWindowMs) {
      return {
        kind: 'answered',
        receipt: { ok: true, messageId: message.messageId, offset: known.offset, duplicate: true },
      };
    }

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
      if (error instanceof BrokerError)
        return { kind: 'answered', receipt: errorReceipt(message.messageId, error) };
      throw error;
    }
    const topicType = topic.record.config.type;
    const mismatch = topicTypeViolation(topicType, message);
    if (mismatch) return reject('TOPIC_TYPE_MISMATCH', mismatch.message, { topic: message.topic, topicType });
    const throttled = this.#deps.throttle(message.topic);
    if (throttled) return { kind: 'answered', receipt: errorReceipt(message.messageId, throttled) };

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
    return { kind: 'stored', message: stored };
  }
}

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
