import {
  ADMIN_CALLS_FEATURE,
  BrokerError,
  type BrokerFrame,
  type ClientFrame,
  type ClientRequestFrame,
  type DeliveredMessage,
  decodeBrokerFrame,
  encodeFrame,
  PROTOCOL_VERSION,
  WEBSOCKET_PATH,
  WEBSOCKET_SUBPROTOCOL,
} from '@ricochet/protocol';
import WebSocket from 'ws';
import { TurnCork } from '../../gateway/turn-cork.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A request as {@link PeerConnection.request} takes it: the connection numbers it. */
export type PeerRequest = DistributiveOmit<ClientRequestFrame, 'id'>;

/** What a subscription made on a {@link PeerConnection} hears from the queue's owner. */
export interface PeerSubscriptionListener {
  deliver(subscriptionId: number, messages: DeliveredMessage[]): void;
  /** The owner has messages Ready for it and no credit (`creditWanted`). */
  creditWanted(ready: number, late: boolean): void;
  /** The owner gave back credit it could not spend (`creditReturned`). */
  creditReturned(credits: number): void;
}

export interface PeerConnectionOptions {
  /** The owner's WebSocket URL, as it advertises it (`--advertise-url`). */
  readonly url: string;
  /** The cluster's peer token (`cluster/membership/peer-token.ts`). */
  readonly token: string;
  readonly queue: number;
  /** This broker's name on the owner's side, in its logs. */
  readonly clientId: string;
  /** The largest frame this side reads. */
  readonly maxFrameBytes: number;
  /** How long to wait for the owner's `welcome`. @default 10000 */
  readonly openTimeoutMs?: number;
  /**
   * How long a request may wait for its answer, in ms, on top of a receive's own
   * `awaitDurationMs`; past it the request fails with `408 REQUEST_TIMEOUT` (it may or may not
   * have taken effect) and the connection stays open. @default 30000
   */
  readonly requestTimeoutMs?: number;
  /**
   * How often the connection pings the owner (a WebSocket ping, answered by the owner's WebSocket
   * layer), in ms. A ping still unanswered when the next is due ends the connection: an owner
   * that stopped (SIGSTOP, a hung event loop, a host gone without a FIN) is found in one to two
   * intervals, well before its lease runs out. @default 2000
   */
  readonly pingIntervalMs?: number;
  /** The connection ended, for whatever reason: every request in flight has failed. */
  readonly onClose?: (reason: string) => void;
}

const DEFAULT_OPEN_TIMEOUT_MS = 10_000;
/** The default of {@link PeerConnectionOptions.requestTimeoutMs}: as long as a client's own request timeout. */
export const DEFAULT_PEER_REQUEST_TIMEOUT_MS = 30_000;
/** The default of {@link PeerConnectionOptions.pingIntervalMs}. */
export const DEFAULT_PEER_PING_INTERVAL_MS = 2_000;

/** How long {@link PeerConnection.close} waits for the owner to answer the close before cutting the connection. */
export const CLOSE_GRACE_MS = 1_000;

/**
 * The forwarding broker's end of a session between brokers (`gateway/peer-access.ts`): one WebSocket to
 * the owner of one queue, carrying many clients' requests, each answered by id, and the
 * deliveries and credit talk of the subscriptions made on it. It never reconnects: when it closes,
 * what was in flight fails with `503 BROKER_UNAVAILABLE`, and its holder opens another once it
 * knows the queue's owner again. Each request has its own timeout (`408`), and a ping every
 * `pingIntervalMs` finds an owner that stopped answering: the connection then closes as above.
 */
export class PeerConnection {
  readonly #socket: WebSocket;
  readonly #options: PeerConnectionOptions;
  readonly #pending = new Map<number, PendingRequest>();
  readonly #listeners = new Map<number, PeerSubscriptionListener>();
  #nextId = 1;
  #closedBecause: string | undefined;
  #pingTimer: ReturnType<typeof setInterval> | undefined;
  /** A ping was sent and its pong has not come back yet. */
  #awaitingPong = false;
  /** The frames of a turn in one write (`turn-cork.ts`), once the connection under the WebSocket is known. */
  #cork: TurnCork | undefined;
  /** The features the owner granted in its `welcome`. */
  #granted: readonly string[] = [];

  private constructor(socket: WebSocket, options: PeerConnectionOptions) {
    this.#socket = socket;
    this.#options = options;
  }

  /** Ping the owner every interval; a ping unanswered by the next one ends the connection. */
  #startPinging(): void {
    const intervalMs = this.#options.pingIntervalMs ?? DEFAULT_PEER_PING_INTERVAL_MS;
    this.#socket.on('pong', () => {
      this.#awaitingPong = false;
    });
    this.#pingTimer = setInterval(() => {
      if (this.#awaitingPong) {
        this.#onClosed(`${this.#options.url} did not answer a ping within ${intervalMs} ms`);
        this.#socket.terminate();
        return;
      }
      this.#awaitingPong = true;
      this.#socket.ping();
    }, intervalMs);
    // A connection's pings never keep the process alive on their own.
    this.#pingTimer.unref();
  }

  /** Connect to the owner and open the session; rejects with the owner's refusal as a {@link BrokerError}. */
  static open(options: PeerConnectionOptions): Promise<PeerConnection> {
    const socket = new WebSocket(
      `${options.url.replace(/\/+$/, '')}${WEBSOCKET_PATH}`,
      WEBSOCKET_SUBPROTOCOL,
      {
        maxPayload: options.maxFrameBytes,
      },
    );
    const connection = new PeerConnection(socket, options);
    return new Promise<PeerConnection>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          fail(
            unavailable(
              `no welcome from ${options.url} within ${options.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS} ms`,
            ),
          ),
        options.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS,
      );
      const fail = (error: Error) => {
        clearTimeout(timer);
        socket.removeAllListeners('message');
        socket.terminate();
        reject(error);
      };
      socket.once('upgrade', (response) => {
        connection.#cork = new TurnCork(response.socket);
      });
      socket.on('error', () => {});
      socket.once('error', (error) => fail(unavailable(`cannot reach ${options.url}: ${error.message}`)));
      socket.once('close', () => fail(unavailable(`${options.url} closed the connection before welcome`)));
      socket.once('open', () => {
        connection.#send({
          type: 'hello',
          protocolVersion: PROTOCOL_VERSION,
          token: options.token,
          clientId: options.clientId,
          queue: options.queue,
          // The owner keeps its frames of deliveries below what this connection reads (maxPayload).
          maxFrameBytes: options.maxFrameBytes,
          features: [ADMIN_CALLS_FEATURE],
        });
      });
      socket.once('message', (data: WebSocket.RawData) => {
        const decoded = decodeBrokerFrame(data as Buffer);
        if (!decoded.ok)
          return fail(unavailable(`${options.url} answered hello with ${decoded.error.message}`));
        if (decoded.frame.type === 'error') return fail(BrokerError.fromFrame(decoded.frame));
        if (decoded.frame.type !== 'welcome')
          return fail(unavailable(`${options.url} answered hello with ${decoded.frame.type}`));
        clearTimeout(timer);
        connection.#granted = decoded.frame.features ?? [];
        socket.removeAllListeners('close');
        socket.removeAllListeners('error');
        socket.on('error', () => {});
        socket.on('message', (bytes: WebSocket.RawData) => connection.#onFrame(bytes as Buffer));
        socket.once('close', () => connection.#onClosed('the owner closed the connection'));
        connection.#startPinging();
        resolve(connection);
      });
    });
  }

  get open(): boolean {
    return this.#closedBecause === undefined;
  }

  /**
   * Whether the owner granted `feature` in its `welcome` (`adminCalls`: it answers admin calls on
   * this session; an owner of an older release does not).
   */
  granted(feature: string): boolean {
    return this.#granted.includes(feature);
  }

  /**
   * Send a request and wait for its answer; an `error` answer rejects with its {@link BrokerError}.
   * `onAnswer` sees the answer as it is read, before any later frame. No answer within
   * `requestTimeoutMs` (the connection's unless given; plus a receive's `awaitDurationMs`) rejects
   * with `408 REQUEST_TIMEOUT`, and a late answer is then ignored.
   */
  request(
    frame: PeerRequest,
    onAnswer?: (answer: BrokerFrame) => void,
    requestTimeoutMs = this.#options.requestTimeoutMs ?? DEFAULT_PEER_REQUEST_TIMEOUT_MS,
  ): Promise<BrokerFrame> {
    if (this.#closedBecause !== undefined) return Promise.reject(unavailable(this.#closedBecause));
    const id = this.#nextId++;
    const awaitMs = frame.type === 'receive' ? frame.awaitDurationMs : 0;
    const timeoutMs = requestTimeoutMs + awaitMs;
    return new Promise<BrokerFrame>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          this.#settle(id, (pending) =>
            pending.reject(
              BrokerError.of(
                'REQUEST_TIMEOUT',
                `${this.#options.url} did not answer ${frame.type} within ${timeoutMs} ms`,
              ),
            ),
          ),
        timeoutMs,
      );
      this.#pending.set(id, {
        resolve: (answer) => {
          onAnswer?.(answer);
          resolve(answer);
        },
        reject,
        timer,
      });
      this.#send({ ...frame, id } as ClientFrame);
    });
  }

  /**
   * Subscribe, and hear what the owner says of the subscription from its first frame on: the
   * listener is in place when the answer is read, before the frames that may follow it in the same
   * read (a `creditReturned` of the first loan, say). Resolves with the subscription's id.
   */
  async subscribe(
    frame: Extract<PeerRequest, { type: 'subscribe' }>,
    listener: PeerSubscriptionListener,
  ): Promise<number> {
    const answer = await this.request(frame, (subscribed) => {
      if (subscribed.type === 'subscribed') this.#listeners.set(subscribed.subscriptionId, listener);
    });
    if (answer.type !== 'subscribed') throw unavailable(`the owner answered subscribe with ${answer.type}`);
    return answer.subscriptionId;
  }

  /** Stop hearing of a subscription (after `unsubscribe`, or once it is no longer wanted). */
  unlisten(subscriptionId: number): void {
    this.#listeners.delete(subscriptionId);
  }

  /** Lend a subscription credit (one-way). */
  credit(subscriptionId: number, credits: number): void {
    if (this.#closedBecause === undefined) this.#send({ type: 'credit', subscriptionId, credits });
  }

  /**
   * Close the session: the owner ends its subscriptions and releases what they held (C2). An owner
   * that does not answer the close (hung, or its host gone) is cut off after
   * {@link CLOSE_GRACE_MS}: whoever closes a route to it must not wait on it.
   */
  async close(): Promise<void> {
    if (this.#closedBecause !== undefined) return;
    const socket = this.#socket;
    const closed = new Promise<void>((resolve) => {
      if (socket.readyState === WebSocket.CLOSED) resolve();
      else socket.once('close', () => resolve());
    });
    this.#onClosed('the connection was closed');
    const cutOff = setTimeout(() => socket.terminate(), CLOSE_GRACE_MS);
    cutOff.unref();
    socket.close();
    await closed;
    clearTimeout(cutOff);
  }

  #send(frame: ClientFrame): void {
    this.#cork?.hold();
    this.#socket.send(encodeFrame(frame));
  }

  #onFrame(bytes: Buffer): void {
    const decoded = decodeBrokerFrame(bytes);
    if (!decoded.ok) {
      // The owner speaks the same release; a frame this side cannot read ends the session.
      this.#onClosed(`the owner sent an undecodable frame: ${decoded.error.message}`);
      this.#socket.terminate();
      return;
    }
    const frame = decoded.frame;
    switch (frame.type) {
      case 'deliver':
        this.#listeners.get(frame.subscriptionId)?.deliver(frame.subscriptionId, frame.messages);
        return;
      case 'creditWanted':
        this.#listeners.get(frame.subscriptionId)?.creditWanted(frame.ready, frame.late);
        return;
      case 'creditReturned':
        this.#listeners.get(frame.subscriptionId)?.creditReturned(frame.credits);
        return;
      // A session between brokers never asks for the queue map; nothing to do with one.
      case 'welcome':
      case 'queueMap':
        return;
      case 'error':
        if (frame.id === undefined) return;
        this.#settle(frame.id, (pending) => pending.reject(BrokerError.fromFrame(frame)));
        return;
      default:
        this.#settle(frame.id, (pending) => pending.resolve(frame));
    }
  }

  #settle(id: number, settle: (pending: PendingRequest) => void): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    settle(pending);
  }

  #onClosed(reason: string): void {
    if (this.#closedBecause !== undefined) return;
    this.#closedBecause = reason;
    clearInterval(this.#pingTimer);
    const error = unavailable(reason);
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.#pending.clear();
    this.#listeners.clear();
    this.#options.onClose?.(reason);
  }
}

/** A request waiting for its answer. */
interface PendingRequest {
  readonly resolve: (frame: BrokerFrame) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

function unavailable(message: string): BrokerError {
  return BrokerError.of('BROKER_UNAVAILABLE', message);
}
