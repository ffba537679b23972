import type {
  AnswerFrame,
  CallOptions,
  Connection,
  ReceivedMessage,
  RequestFrameInput,
} from '@ricochet/client';
import { AckBatcher } from './ack-batcher.js';
import type { OwnerReceives } from './owner-receives.js';

/**
 * Where a simple consumer's settles go (`ack`, the dead-letter `nack`, `changeInvisibleDuration`):
 * the session that leased the message (`OwnerReceives.sessionOf`), else the consumer's own; and
 * once more on its own when the session with an owner closed under the settle (the owner stopped
 * or died). The handle names its queue, so any broker takes it, and the queue's next owner applies
 * the lease rules as always: an ack of a lease that did not survive its owner is `410`.
 */
export class SettleSessions {
  readonly #home: Connection;
  readonly #owners: OwnerReceives | undefined;
  /** The acks of each session, batched per tick (the consumer's own, and each owner's). */
  readonly #acks = new WeakMap<Connection, AckBatcher>();

  constructor(home: Connection, owners: OwnerReceives | undefined) {
    this.#home = home;
    this.#owners = owners;
  }

  /** Ack `message` by `receiptHandle`, in the `ack` frame of its session's tick. */
  ack(message: ReceivedMessage, receiptHandle: string, signal: AbortSignal | undefined): Promise<void> {
    return this.#onSessionOf(message, (session) =>
      this.#acksOn(session).ack(receiptHandle, message.messageId, signal),
    );
  }

  /** A request about `message`, on its session. */
  request<TFrame extends RequestFrameInput>(
    message: ReceivedMessage,
    frame: TFrame,
    options: CallOptions,
  ): Promise<AnswerFrame<TFrame['type']>> {
    return this.#onSessionOf(message, (session) =>
      session.request(frame, options.signal === undefined ? {} : { signal: options.signal }),
    );
  }

  async #onSessionOf<T>(message: ReceivedMessage, settle: (session: Connection) => Promise<T>): Promise<T> {
    const session = this.#owners?.sessionOf(message) ?? this.#home;
    try {
      return await settle(session);
    } catch (error) {
      if (this.#owners?.isStaleRoute(session, error) !== true) throw error;
      return settle(this.#home);
    }
  }

  /** The ack batcher of `session`, made at its first ack. */
  #acksOn(session: Connection): AckBatcher {
    let acks = this.#acks.get(session);
    if (acks === undefined) {
      acks = new AckBatcher((receiptHandles) => session.request({ type: 'ack', receiptHandles }));
      this.#acks.set(session, acks);
    }
    return acks;
  }
}
