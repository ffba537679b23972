import {
  BrokerError,
  type BrokerFrame,
  type DeliveredMessage,
  deliveredMessageBytes,
  type OutgoingMessage,
  type SendReceipt,
} from '@ricochet/protocol';
import type { ReceiveRequest, SettleFailure, SettleItem, SubscribeRequest } from '../../engine/index.js';
import type { CreditLending } from '../routing/credit-lending.js';
import type { PeerConnection, PeerRequest } from './peer-connection.js';

/** A push subscription made in a remote queue, as {@link RemoteQueue.subscribe} takes it. */
/** What a forwarded message was forwarded for: a client's send, or a delivery to a client (push or receive). */
export type ForwardedRequest = 'send' | 'deliver';

export type RemoteSubscribeRequest = Omit<SubscribeRequest, 'creditPool' | 'lender'> & {
  readonly group: string;
  readonly clientId?: string | undefined;
  /** The client subscription's credit over every queue: this queue borrows from it. */
  readonly lending: CreditLending;
};

/**
 * A queue owned by another broker, as the router reaches it (DESIGN.md §9): the messaging calls a
 * local `BrokerEngine` answers, forwarded over a session between brokers (`PeerConnection`) on
 * behalf of the client that made them. Offsets and receipt handles are the queue's own, as an
 * engine's are; the router tags them with the queue, as it does a local engine's.
 *
 * Two things differ from an engine in the same process. A push subscription's credit is lent
 * (`CreditLending`), not spent from a shared pool. And a receive spends its budget when the
 * answer comes, not lease by lease: while it waits, the other queues may lease too, so a waiting
 * receive over several queues can lease more than asked; the router hands the surplus back.
 */
export class RemoteQueue {
  readonly queue: number;
  readonly #connection: PeerConnection;
  /**
   * Told of the messages this broker forwards for its clients: sent on to the owner, or delivered
   * from it. Forwarding is what a client that routes to owners saves; the count shows how much is left.
   */
  readonly #onForwarded: ((request: ForwardedRequest, messages: number) => void) | undefined;

  constructor(
    queue: number,
    connection: PeerConnection,
    onForwarded?: (request: ForwardedRequest, messages: number) => void,
  ) {
    this.queue = queue;
    this.#connection = connection;
    this.#onForwarded = onForwarded;
  }

  /** Whether the session to the owner is still open; once closed, every call fails with 503. */
  get open(): boolean {
    return this.#connection.open;
  }

  async send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    this.#onForwarded?.('send', messages.length);
    return expectAnswer(await this.#request({ type: 'send', messages: [...messages] }), 'sendResult')
      .receipts;
  }

  async register(group: string, subscriptions: Readonly<Record<string, string>>): Promise<void> {
    expectAnswer(await this.#request({ type: 'register', group, subscriptions: { ...subscriptions } }), 'ok');
  }

  /** Lease up to what the budget has left (or `maxMessages`); the budget is spent when the answer comes. */
  async receive(request: ReceiveRequest): Promise<DeliveredMessage[]> {
    const maxMessages = Math.min(request.maxMessages, request.budget?.remaining ?? request.maxMessages);
    const maxBytes = Math.min(
      request.maxBytes ?? Number.POSITIVE_INFINITY,
      request.budget?.remainingBytes ?? Number.POSITIVE_INFINITY,
    );
    if (maxMessages <= 0 || maxBytes <= 0 || request.signal?.aborted) return [];
    const answer = await this.#request({
      type: 'receive',
      group: request.group,
      subscriptions: { ...request.subscriptions },
      maxMessages,
      invisibleDurationMs: request.invisibleDurationMs,
      awaitDurationMs: request.awaitDurationMs,
      ...(Number.isFinite(maxBytes) ? { maxBytes } : {}),
      onBehalfOf: { consumerId: request.consumerId },
    });
    const { messages } = expectAnswer(answer, 'messages');
    if (messages.length > 0) this.#onForwarded?.('deliver', messages.length);
    if (request.budget) {
      request.budget.remaining -= messages.length;
      for (const message of messages) request.budget.remainingBytes -= deliveredMessageBytes(message);
    }
    return messages;
  }

  async ack(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return settleFailures(
      await this.#request({ type: 'ack', receiptHandles: [...receiptHandles], ...behalfOf(settledBy) }),
    );
  }

  async nack(items: readonly SettleItem[], settledBy?: string): Promise<SettleFailure[]> {
    return settleFailures(await this.#request({ type: 'nack', items: [...items], ...behalfOf(settledBy) }));
  }

  async release(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return settleFailures(
      await this.#request({ type: 'release', receiptHandles: [...receiptHandles], ...behalfOf(settledBy) }),
    );
  }

  async changeInvisibleDuration(
    receiptHandle: string,
    invisibleDurationMs: number,
  ): Promise<{ readonly messageId: string; readonly receiptHandle: string }> {
    const answer = await this.#request({
      type: 'changeInvisibleDuration',
      receiptHandle,
      invisibleDurationMs,
    });
    const changed = expectAnswer(answer, 'invisibilityChanged');
    return { messageId: changed.messageId, receiptHandle: changed.receiptHandle };
  }

  /**
   * Subscribe in the queue, with a first loan from the client subscription's credit; the owner then
   * asks for more and gives back what it cannot spend, through `request.lending`. Resolves with
   * the subscription's id on the owner, which {@link credit}, {@link unsubscribe} and {@link end} take.
   */
  async subscribe(request: RemoteSubscribeRequest): Promise<number> {
    const { lending, sink } = request;
    const queue = this.queue;
    const loan = lending.openLoan(queue, request.maxCachedMessages);
    try {
      return await this.#connection.subscribe(
        {
          type: 'subscribe',
          group: request.group,
          subscriptions: { ...request.subscriptions },
          maxCachedMessages: loan,
          onBehalfOf: {
            consumerId: request.consumerId,
            ...(request.clientId === undefined ? {} : { clientId: request.clientId }),
          },
        },
        {
          deliver: (subscriptionId, messages) => {
            lending.delivered(queue, messages.length);
            this.#onForwarded?.('deliver', messages.length);
            sink(subscriptionId, messages);
          },
          creditWanted: (ready, late) => lending.wanted(queue, ready, late),
          creditReturned: (credits) => lending.returned(queue, credits),
        },
      );
    } catch (error) {
      // Refused, or the owner went away: nothing was lent after all.
      lending.forget(queue);
      throw error;
    }
  }

  /** Lend a subscription in this queue credit (what `CreditLending` calls for this queue). */
  credit(subscriptionId: number, credits: number): void {
    this.#connection.credit(subscriptionId, credits);
  }

  /** Stop deliveries; what the subscription holds stays leased until settled or {@link end}ed. */
  async unsubscribe(subscriptionId: number): Promise<void> {
    expectAnswer(await this.#request({ type: 'unsubscribe', subscriptionId }), 'ok');
  }

  /** The client's session ended: end the subscription, and release what it holds (C2). */
  async end(subscriptionId: number): Promise<void> {
    this.#connection.unlisten(subscriptionId);
    expectAnswer(await this.#request({ type: 'unsubscribe', subscriptionId, release: true }), 'ok');
  }

  /** End the session to the owner: it ends the subscriptions made on it and releases what they held (C2). */
  close(): Promise<void> {
    return this.#connection.close();
  }

  #request(frame: PeerRequest): Promise<BrokerFrame> {
    return this.#connection.request(frame);
  }
}

/** The answer of the type a request expects; anything else means the owner is not speaking this protocol. */
function expectAnswer<TType extends BrokerFrame['type']>(
  answer: BrokerFrame,
  type: TType,
): Extract<BrokerFrame, { type: TType }> {
  if (answer.type !== type)
    throw BrokerError.of('INTERNAL_ERROR', `the queue's owner answered with ${answer.type}, not ${type}`);
  return answer as Extract<BrokerFrame, { type: TType }>;
}

function behalfOf(settledBy: string | undefined) {
  return settledBy === undefined ? {} : { onBehalfOf: { principal: settledBy } };
}

function settleFailures(answer: BrokerFrame): SettleFailure[] {
  return expectAnswer(answer, 'settled').failures.map(({ index, ...error }) => ({
    index,
    error: BrokerError.fromFrame(error),
  }));
}
