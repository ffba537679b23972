import { type Connection, type ConnectionOptions, OwnerRoutes, type ReceivedMessage } from '@ricochet/client';
import {
  type DeliveredMessage,
  OWNED_RECEIVES_FEATURE,
  QUEUE_MAP_FEATURE,
  type ReceiveFrame,
} from '@ricochet/protocol';

/** What a simple consumer's own connection asks for to receive from the owners. */
export const OWNER_RECEIVE_FEATURES: readonly string[] = [QUEUE_MAP_FEATURE, OWNED_RECEIVES_FEATURE];

/** Messages one session leased, and the session, which settles them best. */
export interface Leases {
  readonly session: Connection;
  readonly messages: readonly DeliveredMessage[];
}

/**
 * A simple consumer's routes to the queue owners (docs/protocol/README.md#owned-receives): the
 * queue map its own session is told, a session with every other owner the map names (asking for
 * `ownedReceives`), and which session leased each message.
 *
 * {@link lease} asks the owners in turn with `scope: 'owned'`, none of them waiting, so that a busy
 * consumer is never forwarded for. It does not wait itself: an empty receive that is to wait goes
 * through the consumer's own session as before, whose broker waits on every queue with one budget
 * and hands back (releases) what an owner leases too late. Asking each owner to wait instead would
 * lease on all of them at once, and each lease after the first answer would be a durable lease and
 * release for nothing.
 */
export class OwnerReceives {
  readonly #home: Connection;
  readonly #routes: OwnerRoutes;
  /** The session of each message an owner other than the home broker leased. */
  readonly #leasedOn = new WeakMap<ReceivedMessage, Connection>();
  /** Which owner a receive asks first: each in turn, so that no owner's queues wait behind another's. */
  #turn = 0;

  /**
   * @param home - the consumer's own connection, opened with {@link OWNER_RECEIVE_FEATURES}.
   * @param options - its connection options, which each owner's connection takes with the owner's endpoint.
   */
  constructor(home: Connection, options: ConnectionOptions) {
    this.#home = home;
    this.#routes = new OwnerRoutes(home, options, {
      linkFeatures: [OWNED_RECEIVES_FEATURE],
      untilActivated: true,
    });
  }

  /** The consumer started: open the sessions with the owners the map names, now and from now on. */
  activate(): void {
    this.#routes.activate();
  }

  /**
   * Lease up to `frame.maxMessages` from the owners, in turn, until that many are leased or each
   * was asked. `undefined` when the receive is to go through the own session instead: no route to
   * every owner ({@link OwnerRoutes.ownerSessions}), or an owner failed before any message was
   * leased (its error, if it is not the route's, comes again from the own session). After a
   * message was leased, a failing owner ends the turn with what the others leased.
   */
  async lease(
    frame: Omit<ReceiveFrame, 'id' | 'scope' | 'awaitDurationMs'>,
    options: { readonly signal: AbortSignal; readonly timeoutMs: number },
  ): Promise<Leases[] | undefined> {
    const owners = this.#routes.ownerSessions(OWNED_RECEIVES_FEATURE);
    if (owners === undefined) return undefined;
    const first = this.#turn++ % owners.length;
    const leases: Leases[] = [];
    let remaining = frame.maxMessages;
    for (let i = 0; i < owners.length && remaining > 0; i++) {
      const session = owners[(first + i) % owners.length] as Connection;
      let messages: DeliveredMessage[];
      try {
        const answer = await session.request(
          { ...frame, maxMessages: remaining, awaitDurationMs: 0, scope: 'owned' },
          options,
        );
        messages = answer.messages;
      } catch (error) {
        if (options.signal.aborted) throw error;
        return leases.length === 0 ? undefined : leases;
      }
      if (messages.length === 0) continue;
      leases.push({ session, messages });
      remaining -= messages.length;
    }
    return leases;
  }

  /** Remember that `session` leased `message`, for {@link sessionOf}. */
  leasedOn(message: ReceivedMessage, session: Connection): void {
    if (session !== this.#home) this.#leasedOn.set(message, session);
  }

  /**
   * The session to settle `message` on: the one that leased it while it is open (its broker owns
   * the message's queue, or forwards should the queue have moved), else the consumer's own. A
   * receipt handle names its queue, so any broker of the cluster takes it.
   */
  sessionOf(message: ReceivedMessage): Connection {
    const session = this.#leasedOn.get(message);
    return session?.currentStatus.state === 'connected' ? session : this.#home;
  }

  /**
   * Whether `error`, from a settle on `session`, means its session with an owner closed under it:
   * the settle is to be made again on the consumer's own session.
   */
  isStaleRoute(session: Connection, error: unknown): boolean {
    return this.#routes.isStaleRoute(session, error);
  }

  /** Close the sessions with the owners; the consumer's own is the consumer's to close. */
  close(): Promise<void> {
    return this.#routes.close();
  }
}
