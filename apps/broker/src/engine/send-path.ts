import { type Clock, DELAY_LEVELS_MS, type TopicType } from '@ricochet/core';
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
  readonly maxBodyBytes: number;
  readonly dedupWindowMs: number;
  readonly maxDelayMs: number;
  /** Messages were appended to a topic: wake its consumers once they are visible. */
  readonly onAppended: (topic: string) => void;
  /** Throttling (R4): the error to answer instead of storing, or `undefined` to accept. */
  readonly throttle: (topic: string) => BrokerError | undefined;
}

/**
 * The send path (R1, R3): validate each message, answer duplicates with the original receipt,
 * append the rest, and answer once the commit holding them is durable. Concurrent sends share
 * commits: every message appended in one event turn lands in one transaction and one fsync.
 */
export class SendPath {
  readonly #deps: SendPathDeps;
  /** Sends stored but not yet durable, by message id: a retry racing its original waits for it. */
  readonly #pending = new Map<string, Promise<SendReceipt>>();

  constructor(deps: SendPathDeps) {
    this.#deps = deps;
  }

  /** Store a batch; one receipt per message, in order. Never rejects. */
  async send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    const startedAt = performance.now();
    const nowMs = this.#deps.clock.now();
    // Stored messages are answered when the commit holding them is durable. The promise exists
    // before the first append so that a second copy of an id in the same batch finds the first.
    let settleBatch: (durable: Promise<void>) => void = () => {};
    const batchDurable = new Promise<void>((resolve, reject) => {
      settleBatch = (durable) => durable.then(resolve, reject);
    });
    // Receipts observe the failure; a batch with nothing stored must not leave it unhandled.
    batchDurable.catch(() => {});
    const receipts = messages.map((message) => this.#accept(message, nowMs, batchDurable));
    settleBatch(this.#deps.store.durable());
    const answered = await Promise.all(receipts);
    this.#deps.metrics.sendLatency((performance.now() - startedAt) / 1_000);
    for (const receipt of answered) if (!receipt.ok) this.#deps.metrics.rejected(receipt.error.code);
    return answered;
  }

  #accept(
    message: OutgoingMessage,
    nowMs: number,
    batchDurable: Promise<void>,
  ): SendReceipt | Promise<SendReceipt> {
    const reject = (name: ErrorName, text: string, details?: Record<string, string | number>) =>
      failedReceipt(message.messageId, name, text, details);

    // R3: a retried send reuses its id; answer it with the original receipt, never store twice.
    const pending = this.#pending.get(message.messageId);
    if (pending) return pending.then((receipt) => (receipt.ok ? { ...receipt, duplicate: true } : receipt));
    const known = this.#deps.store.locateMessage(message.messageId);
    if (known && nowMs - known.storedAt < this.#deps.dedupWindowMs) {
      return { ok: true, messageId: message.messageId, offset: known.offset, duplicate: true };
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
    const deliverAt = this.#deliverAt(message, nowMs);
    if (deliverAt !== undefined && deliverAt - nowMs > this.#deps.maxDelayMs) {
      return reject(
        'BAD_REQUEST',
        `the delay reaches ${deliverAt - nowMs} ms ahead; the limit is ${this.#deps.maxDelayMs} ms`,
      );
    }

    let topicType: TopicType;
    let topic: ReturnType<TopicRegistry['require']>;
    try {
      topic = this.#deps.topics.require(message.topic);
      topicType = topic.record.config.type;
    } catch (error) {
      if (error instanceof BrokerError) return errorReceipt(message.messageId, error);
      throw error;
    }
    const mismatch = topicTypeMismatch(topicType, message, deliverAt !== undefined || hasDelayField(message));
    if (mismatch) return reject('TOPIC_TYPE_MISMATCH', mismatch, { topic: message.topic, topicType });
    const throttled = this.#deps.throttle(message.topic);
    if (throttled) return errorReceipt(message.messageId, throttled);

    const offset = this.#deps.topics.allocateOffset(topic);
    const stored: StoredMessage = {
      messageId: message.messageId,
      topic: message.topic,
      offset,
      ...(message.tag === undefined ? {} : { tag: message.tag }),
      ...(message.keys === undefined ? {} : { keys: message.keys }),
      ...(message.messageGroup === undefined ? {} : { messageGroup: message.messageGroup }),
      ...(message.properties === undefined ? {} : { properties: message.properties }),
      body: message.body,
      bornAt: message.bornAt,
      storedAt: nowMs,
      ...(deliverAt === undefined || deliverAt <= nowMs ? {} : { deliverAt }),
    };
    void this.#deps.store.appendMessage(stored);
    void this.#deps.store.putMessageLocation(message.messageId, {
      topic: message.topic,
      offset,
      storedAt: nowMs,
    });
    this.#deps.metrics.messagesSent(message.topic, 1);
    this.#deps.onAppended(message.topic);
    const receipt = batchDurable.then(
      (): SendReceipt => ({ ok: true, messageId: message.messageId, offset, duplicate: false }),
      () => failedReceipt(message.messageId, 'INTERNAL_ERROR', 'the store failed to commit the message'),
    );
    this.#pending.set(message.messageId, receipt);
    void receipt.then(() => {
      if (this.#pending.get(message.messageId) === receipt) this.#pending.delete(message.messageId);
    });
    return receipt;
  }

  /** T1: the absolute delivery time of a delay message, or `undefined` for a plain one. */
  #deliverAt(message: OutgoingMessage, nowMs: number): number | undefined {
    if (message.deliverAt !== undefined) return message.deliverAt;
    if (message.delayMs !== undefined) return nowMs + message.delayMs;
    if (message.delayLevel !== undefined) return nowMs + (DELAY_LEVELS_MS[message.delayLevel - 1] ?? 0);
    return undefined;
  }
}

function hasDelayField(message: OutgoingMessage): boolean {
  return message.deliverAt !== undefined || message.delayMs !== undefined || message.delayLevel !== undefined;
}

/** The topic type is a guard (DESIGN.md §2): say what does not fit, or `undefined`. */
function topicTypeMismatch(type: TopicType, message: OutgoingMessage, delayed: boolean): string | undefined {
  switch (type) {
    case 'fifo':
      if (message.messageGroup === undefined)
        return `topic "${message.topic}" is fifo: a message needs a messageGroup`;
      if (delayed) return `topic "${message.topic}" is fifo: it takes no delay messages`;
      return undefined;
    case 'delay':
      if (!delayed)
        return `topic "${message.topic}" is a delay topic: a message needs deliverAt, delayMs or delayLevel`;
      if (message.messageGroup !== undefined)
        return `topic "${message.topic}" is a delay topic: it takes no messageGroup`;
      return undefined;
    case 'normal':
      if (message.messageGroup !== undefined) {
        return `topic "${message.topic}" is normal: a message with a messageGroup needs a fifo topic`;
      }
      return undefined;
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
