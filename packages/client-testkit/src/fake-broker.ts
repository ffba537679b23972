import type { AddressInfo } from 'node:net';
import { assertNever } from '@ricochet/core';
import {
  type BrokerFrame,
  type ClientFrame,
  type DeliveredMessage,
  decodeClientFrame,
  type ErrorPayload,
  encodeFrame,
  type HelloFrame,
  PROTOCOL_VERSION,
  WEBSOCKET_PATH,
  WEBSOCKET_SUBPROTOCOL,
} from '@ricochet/protocol';
import { type WebSocket, WebSocketServer } from 'ws';
import { deliveredMessage } from './delivered-message.js';
import { FakeLeases } from './fake-leases.js';
import { FakePushDispatch, type FakeSubscription } from './fake-push-dispatch.js';
import { FakeSession } from './fake-session.js';

/**
 * A scriptable stand-in for the Ricochet broker, for the client packages' tests: a real
 * WebSocket server on 127.0.0.1 and a free port, speaking the real protocol (subprotocol,
 * `hello`/`welcome`, MessagePack frames). It answers every request with a plausible default;
 * tests replace the answer per frame type with {@link FakeBroker.on} to throttle, fail, delay,
 * stay silent or drop the connection.
 */

const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

type FrameOf<TType extends ClientFrame['type']> = Extract<ClientFrame, { type: TType }>;

/** Handles one client frame; answer through `session`, or not at all. */
export type FrameHandler<TType extends ClientFrame['type']> = (
  frame: FrameOf<TType>,
  session: FakeSession,
) => void | Promise<void>;

type Handlers = { [TType in ClientFrame['type']]?: FrameHandler<TType> };

export interface FakeBrokerOptions {
  /**
   * Decide on a `hello`: `undefined` accepts it, an error payload refuses it (sent, then the
   * connection closes), `'ignore'` never answers. @default accept every hello
   */
  readonly onHello?: (hello: HelloFrame) => ErrorPayload | 'ignore' | undefined;
  /** Announced in `welcome`. @default 4 MiB */
  readonly maxBodyBytes?: number;
  /** Announced in `welcome`. @default 16 MiB */
  readonly maxFrameBytes?: number;
  /** Extra fields for `welcome`, e.g. one a newer broker adds. @default {} */
  readonly welcomeExtra?: Readonly<Record<string, unknown>>;
}

interface FrameWaiter {
  readonly predicate: (frame: ClientFrame) => boolean;
  readonly count: number;
  readonly resolve: (frames: ClientFrame[]) => void;
}

export class FakeBroker {
  /** `ws://127.0.0.1:<port>`, the base URL clients take as `endpoint`. */
  readonly endpoint: string;
  /** Every frame received after a handshake, from every session, in arrival order. */
  readonly frames: ClientFrame[] = [];
  /** Every session opened so far, in order. */
  readonly sessions: FakeSession[] = [];
  /** WebSocket connections accepted, whether or not their handshake succeeded. */
  connectionCount = 0;
  /** The default `send` handler's log: message id → offset, to answer duplicates (R3). */
  readonly stored = new Map<string, number>();
  /** Messages the default `receive` handler hands out (and leases), oldest first. */
  readonly ready: DeliveredMessage[] = [];
  readonly #server: WebSocketServer;
  readonly #options: FakeBrokerOptions;
  readonly #handlers: Handlers = {};
  readonly #frameWaiters = new Set<FrameWaiter>();
  readonly #sessionWaiters = new Set<{ count: number; resolve: (session: FakeSession) => void }>();
  readonly #leases = new FakeLeases();
  readonly #push = new FakePushDispatch(this.#leases);
  #nextOffset = 0;

  private constructor(server: WebSocketServer, options: FakeBrokerOptions) {
    this.#server = server;
    this.#options = options;
    const { port } = server.address() as AddressInfo;
    this.endpoint = `ws://127.0.0.1:${port}`;
    server.on('connection', (socket) => this.#accept(socket));
  }

  /** Listen on 127.0.0.1, on a port the system picks. */
  static async start(options: FakeBrokerOptions = {}): Promise<FakeBroker> {
    const server = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      path: WEBSOCKET_PATH,
      // As the real broker does: a larger message closes the connection with 1009.
      maxPayload: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      handleProtocols: (offered) => (offered.has(WEBSOCKET_SUBPROTOCOL) ? WEBSOCKET_SUBPROTOCOL : false),
    });
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    return new FakeBroker(server, options);
  }

  /** A delivered message with the given fields over plausible defaults. */
  static deliveredMessage(fields: Partial<DeliveredMessage> = {}): DeliveredMessage {
    return deliveredMessage(fields);
  }

  /** Live receipt handles → message id, as the default `ack` and `changeInvisibleDuration` see them. */
  get leases(): Map<string, string> {
    return this.#leases.live;
  }

  /** Every subscription the default `subscribe` handler opened, in order. */
  get subscriptions(): readonly FakeSubscription[] {
    return this.#push.subscriptions;
  }

  /**
   * Messages the default push dispatch delivers to active subscriptions with credit, oldest first;
   * see {@link push}. Released and C2-released messages come back here, at the front.
   */
  get pushReady(): readonly DeliveredMessage[] {
    return this.#push.ready;
  }

  /** Replace the answer to one frame type; `undefined` restores the default. */
  on<TType extends ClientFrame['type']>(type: TType, handler: FrameHandler<TType> | undefined): void {
    (this.#handlers as Record<string, unknown>)[type] = handler;
  }

  /** The frames of one type received so far. */
  framesOf<TType extends ClientFrame['type']>(type: TType): FrameOf<TType>[] {
    return this.frames.filter((frame): frame is FrameOf<TType> => frame.type === type);
  }

  /** Resolves once `count` frames of `type` have been received in all (counting earlier ones). */
  async waitForFrames<TType extends ClientFrame['type']>(type: TType, count = 1): Promise<FrameOf<TType>[]> {
    await new Promise<ClientFrame[]>((resolve) => {
      const waiter: FrameWaiter = { predicate: (frame) => frame.type === type, count, resolve };
      this.#frameWaiters.add(waiter);
      this.#checkFrameWaiters();
    });
    return this.framesOf(type);
  }

  /** Resolves with session number `count` (1-based) once it has completed its handshake. */
  waitForSession(count: number): Promise<FakeSession> {
    return new Promise((resolve) => {
      this.#sessionWaiters.add({ count, resolve });
      this.#checkSessionWaiters();
    });
  }

  /**
   * Make `messages` ready for push subscriptions and deliver them as far as credit allows; the
   * rest wait in {@link pushReady} until a `credit` or a new subscription makes room.
   */
  push(...messages: DeliveredMessage[]): void {
    this.#push.add(messages);
    this.#push.dispatch();
  }

  /** `message` with a fresh receipt handle that the default handlers accept until it is settled. */
  lease(message: DeliveredMessage): DeliveredMessage {
    return this.#leases.lease(message);
  }

  /** Store a message id as the default `send` handler does, deduplicating by id (R3). */
  store(messageId: string): { ok: true; messageId: string; offset: number; duplicate: boolean } {
    const known = this.stored.get(messageId);
    if (known !== undefined) return { ok: true, messageId, offset: known, duplicate: true };
    const offset = this.#nextOffset++;
    this.stored.set(messageId, offset);
    return { ok: true, messageId, offset, duplicate: false };
  }

  /** Cut every open connection, as a crashed broker would. */
  dropAll(): void {
    for (const client of this.#server.clients) client.terminate();
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(socket: WebSocket): void {
    this.connectionCount += 1;
    let session: FakeSession | undefined;
    socket.on('message', (data: Buffer) => {
      const decoded = decodeClientFrame(new Uint8Array(data));
      if (!decoded.ok) {
        socket.send(encodeFrame({ type: 'error', code: 400, message: decoded.error.message }));
        return;
      }
      const frame = decoded.frame;
      if (session !== undefined) {
        this.frames.push(frame);
        this.#checkFrameWaiters();
        void this.#dispatch(frame, session);
        return;
      }
      session = this.#handshake(socket, frame);
    });
  }

  /** Answer the first frame of a connection; the session it opens, if any. */
  #handshake(socket: WebSocket, frame: ClientFrame): FakeSession | undefined {
    if (frame.type !== 'hello') {
      socket.send(encodeFrame({ type: 'error', code: 400, message: 'the first frame must be hello' }));
      socket.close(1002);
      return undefined;
    }
    const refusal = this.#options.onHello?.(frame);
    if (refusal === 'ignore') return undefined;
    if (refusal !== undefined) {
      socket.send(encodeFrame({ type: 'error', ...refusal }));
      socket.close(1008);
      return undefined;
    }
    const session = new FakeSession(`session-${this.sessions.length + 1}`, frame, socket);
    this.sessions.push(session);
    void session.closed.then(() => this.#push.endSession(session));
    socket.send(
      encodeFrame({
        type: 'welcome',
        protocolVersion: PROTOCOL_VERSION,
        sessionId: session.sessionId,
        maxBodyBytes: this.#options.maxBodyBytes ?? 4 * 1024 * 1024,
        maxFrameBytes: this.#options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
        ...this.#options.welcomeExtra,
      } as BrokerFrame),
    );
    this.#checkSessionWaiters();
    return session;
  }

  async #dispatch(frame: ClientFrame, session: FakeSession): Promise<void> {
    const handler = (this.#handlers as Record<string, FrameHandler<ClientFrame['type']> | undefined>)[
      frame.type
    ];
    if (handler !== undefined) {
      await handler(frame as never, session);
      return;
    }
    this.#answerByDefault(frame, session);
  }

  #answerByDefault(frame: ClientFrame, session: FakeSession): void {
    switch (frame.type) {
      case 'send':
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => this.store(m.messageId)),
        });
        return;
      case 'receive':
        session.send({
          type: 'messages',
          id: frame.id,
          messages: this.ready.splice(0, frame.maxMessages).map((message) => this.lease(message)),
        });
        return;
      case 'ack':
        session.send({ type: 'settled', id: frame.id, failures: this.#settleHandles(frame.receiptHandles) });
        return;
      case 'release':
        session.send({
          type: 'settled',
          id: frame.id,
          failures: this.#settleHandles(frame.receiptHandles, 'release'),
        });
        // Released messages are ready again; settling returns no credit, so nothing else moves.
        this.#push.dispatch();
        return;
      case 'nack':
        session.send({
          type: 'settled',
          id: frame.id,
          failures: this.#settleHandles(frame.items.map((item) => item.receiptHandle)),
        });
        return;
      case 'changeInvisibleDuration': {
        const messageId = this.leases.get(frame.receiptHandle);
        if (messageId === undefined) {
          session.send({ type: 'error', id: frame.id, code: 410, message: 'unknown receipt handle' });
          return;
        }
        this.#leases.end(frame.receiptHandle);
        const leased = this.lease(deliveredMessage({ messageId }));
        session.send({
          type: 'invisibilityChanged',
          id: frame.id,
          messageId,
          receiptHandle: leased.receiptHandle,
        });
        return;
      }
      case 'subscribe': {
        const subscription = this.#push.subscribe(frame, session);
        // As the real broker does: the answer first, then deliveries, often in the same TCP segment.
        session.send({ type: 'subscribed', id: frame.id, subscriptionId: subscription.subscriptionId });
        this.#push.dispatch();
        return;
      }
      case 'register':
        session.send({ type: 'ok', id: frame.id });
        return;
      case 'unsubscribe': {
        const subscription = this.#push.subscriptionOf(session, frame.subscriptionId);
        if (subscription !== undefined) subscription.active = false;
        session.send({ type: 'ok', id: frame.id });
        return;
      }
      case 'hello':
        session.send({ type: 'error', code: 400, message: 'a second hello' });
        return;
      case 'adminCall':
        // As the real broker answers a client that sends it.
        session.send({
          type: 'error',
          id: frame.id,
          code: 400,
          message: 'adminCall is only for sessions between brokers',
        });
        return;
      case 'credit': {
        const subscription = this.#push.subscriptionOf(session, frame.subscriptionId);
        if (subscription === undefined) return;
        subscription.credits += frame.credits;
        this.#push.dispatch();
        return;
      }
      default:
        assertNever(frame, 'client frame');
    }
  }

  /**
   * Settle live handles; the others fail with 410, as the broker answers (S3). A released push
   * delivery is ready again, at the front of {@link pushReady}.
   */
  #settleHandles(
    receiptHandles: readonly string[],
    outcome: 'settle' | 'release' = 'settle',
  ): { index: number; code: number; message: string }[] {
    const failures: { index: number; code: number; message: string }[] = [];
    const released: DeliveredMessage[] = [];
    receiptHandles.forEach((receiptHandle, index) => {
      if (this.#leases.end(receiptHandle)) {
        const message = this.#push.settled(receiptHandle, outcome);
        if (message !== undefined) released.push(message);
        return;
      }
      failures.push({ index, code: 410, message: `receipt handle ${receiptHandle} is not live` });
    });
    this.#push.requeue(released);
    return failures;
  }

  #checkFrameWaiters(): void {
    for (const waiter of this.#frameWaiters) {
      const matching = this.frames.filter(waiter.predicate);
      if (matching.length >= waiter.count) {
        this.#frameWaiters.delete(waiter);
        waiter.resolve(matching);
      }
    }
  }

  #checkSessionWaiters(): void {
    for (const waiter of this.#sessionWaiters) {
      const session = this.sessions[waiter.count - 1];
      if (session !== undefined) {
        this.#sessionWaiters.delete(waiter);
        waiter.resolve(session);
      }
    }
  }
}
