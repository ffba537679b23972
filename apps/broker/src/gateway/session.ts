import { randomUUID } from 'node:crypto';
import {
  ADMIN_CALLS_FEATURE,
  BrokerError,
  type BrokerFrame,
  type ClientFrame,
  CREDIT_LENDING_FEATURE,
  type DeliveredMessage,
  decodeClientFrame,
  deliveryFrameBudget,
  ERROR_CODES,
  encodeFrame,
  type OnBehalfOf,
  OWNED_RECEIVES_FEATURE,
  OWNED_SUBSCRIPTIONS_FEATURE,
  PROTOCOL_VERSION,
  QUEUE_MAP_FEATURE,
  splitDeliveries,
} from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { AccessControl } from '../auth/access-control.js';
import {
  type AdminService,
  answerAdminCall,
  type MessagingService,
  type SettleFailure,
} from '../engine/index.js';
import { CLOSE_CODES } from './close-codes.js';
import type { ConnectionLimits } from './connection-limits.js';
import type { FrameChannel } from './frame-channel.js';
import { EVENT_LOOP_INBOUND, FrameInbox, type InboundBudget } from './frame-inbox.js';
import type { PeerAccess } from './peer-access.js';
import { ConnectionUsage, RequestPipeline } from './pipeline/request-pipeline.js';
import type { QueueMapFeed } from './queue-map-feed.js';
import { type FrameVerdict, type RequestFrame, SessionAccess, sendAllowed } from './session-access.js';
import { judgeHello } from './session-handshake.js';
import { SessionSubscriptions } from './session-subscriptions.js';

export interface SessionOptions {
  readonly engine: MessagingService;
  readonly log: FastifyBaseLogger;
  /** Who may do what (DESIGN.md §7); disabled when the broker runs without authentication. */
  readonly access: AccessControl;
  readonly helloTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly maxFrameBytes: number;
  /** Whether the broker still takes new work (false while draining). */
  readonly accepting: () => boolean;
  /** Per-connection caps on requests, waiting receives and subscriptions. */
  readonly limits: ConnectionLimits;
  /** Sessions between brokers (`hello.queue`); without it, every such `hello` is refused. */
  readonly peers?: PeerAccess | undefined;
  /**
   * The queue map on this session's transport, for a client that asks for it
   * (`hello.features`); without it (one broker, or a transport without a stream) none is granted.
   */
  readonly queueMap?: QueueMapFeed | undefined;
  /** The event loop's budget for incoming frames, shared by every session. @default EVENT_LOOP_INBOUND */
  readonly inbound?: InboundBudget | undefined;
}

/**
 * One client connection: the handshake, then one frame in, one answer out, per request. Every
 * failure is answered on this session only: a malformed frame gets a `400` error frame and the
 * session goes on; nothing a client sends can disturb another session. The connection is a
 * {@link FrameChannel}, so every transport gets the same session.
 */
export class Session {
  readonly id = randomUUID();
  readonly #channel: FrameChannel;
  readonly #options: SessionOptions;
  readonly #access: SessionAccess;
  /** What requests reach: the broker's service, or one queue's for a session between brokers. */
  #engine: MessagingService;
  /**
   * The queue's service of a session between brokers (`hello.queue`, `peer-access.ts`), for the
   * admin calls the forwarding broker makes on it (`adminCall`); `undefined` on a client's
   * session, which may not make them.
   */
  #peerAdmin: AdminService | undefined;
  /** Forget this session among its queue's (`PeerSessions`). */
  #untrackPeer: (() => void) | undefined;
  /** Stop telling this session of queue map changes (granted `queueMap` only). */
  #unwatchQueueMap: (() => void) | undefined;
  /** Granted `ownedSubscriptions`: its subscribes may carry `scope: 'owned'`. */
  #ownedSubscriptions = false;
  /** Granted `ownedReceives`: its receives may carry `scope: 'owned'`. */
  #ownedReceives = false;
  /** Granted `creditLending`: its owned-scope subscriptions borrow its credit, as a peer session's do. */
  #creditLending = false;
  #clientId: string;
  /** The `clientId` the client named itself with in `hello`, if it did: what identifies a broadcast instance (B1). */
  #ownClientId: string | undefined;
  /**
   * The bytes of messages one frame to this client may carry: below the frame limit its `hello`
   * announced. A frame past it would close the client's connection, its deliveries would be
   * released and pushed again, and the client would reconnect into the same frame: a loop.
   */
  #frameBudgetBytes = deliveryFrameBudget(undefined);
  #phase: 'awaitingHello' | 'open' | 'closed' = 'awaitingHello';
  readonly #helloTimer: NodeJS.Timeout;
  /** Aborted when the session ends: long polls answer at once, nothing is sent afterwards. */
  readonly #ended = new AbortController();
  /** The stages every request passes (drain, access, caps, counting, failures), as on every front door. */
  readonly #pipeline: RequestPipeline;
  /** The requests in flight, and the receives among them that may wait: capped per connection. */
  readonly #usage: ConnectionUsage;
  /** A client's first invalid frame is logged at warn; the rest are only counted (metrics). */
  #invalidFrameLogged = false;
  readonly #subscriptions = new SessionSubscriptions();
  /** Frames that came after the turn's budget for incoming frames ran out, for the next turns. */
  readonly #inbox: FrameInbox;

  constructor(channel: FrameChannel, options: SessionOptions) {
    this.#channel = channel;
    this.#options = options;
    this.#access = new SessionAccess(options.access);
    this.#engine = options.engine;
    this.#pipeline = new RequestPipeline({
      accepting: options.accepting,
      limits: options.limits,
      metrics: options.engine.metrics,
      log: options.log,
    });
    this.#usage = new ConnectionUsage(() => this.#subscriptions.active);
    this.#clientId = `session-${this.id.slice(0, 8)}`;
    this.#helloTimer = setTimeout(() => {
      options.limits.rejected('helloTimeoutMs');
      this.#fail(
        ERROR_CODES.BAD_REQUEST.code,
        `no hello within ${options.helloTimeoutMs} ms`,
        CLOSE_CODES.protocolError,
      );
    }, options.helloTimeoutMs);
    this.#helloTimer.unref();
    this.#inbox = new FrameInbox(options.inbound ?? EVENT_LOOP_INBOUND, {
      pauseReading: () => channel.pauseReading(),
      resumeReading: () => channel.resumeReading(),
      handle: (bytes) => this.#onFrame(bytes),
    });
    channel.listen({
      onFrame: (bytes) => this.#inbox.offer(bytes),
      onUnreadable: (description) => this.#onUnreadable(description),
      onClose: () => this.#onClose(),
    });
  }

  /** Requests being worked on. */
  get inFlight(): number {
    return this.#usage.inflightRequests;
  }

  /** Resolves when no request is being worked on. */
  whenIdle(): Promise<void> {
    return this.#usage.idle();
  }

  /** Close the connection with `code` (the broker is going away). */
  close(code: number = CLOSE_CODES.goingAway, reason = 'broker shutting down'): void {
    if (this.#phase === 'closed') return;
    this.#channel.close(code, reason);
    this.#onClose();
  }

  /**
   * A session between brokers: trusted with everything, free of the per-connection caps (it
   * carries many clients' requests, each capped where it connected), and it may act `onBehalfOf`
   * a client.
   */
  get #peer(): boolean {
    return this.#peerAdmin !== undefined;
  }

  #onUnreadable(message: string): void {
    if (this.#phase === 'closed') return;
    this.#logInvalidFrameOnce(message);
    // Like any other bad first frame, a text message instead of hello ends the session.
    if (this.#phase === 'awaitingHello')
      this.#fail(ERROR_CODES.BAD_REQUEST.code, message, CLOSE_CODES.protocolError);
    else this.#sendError(ERROR_CODES.BAD_REQUEST.code, message);
  }

  #onFrame(bytes: Uint8Array): void {
    if (this.#phase === 'closed') return;
    const decoded = decodeClientFrame(bytes);
    if (!decoded.ok) {
      const { id, message } = decoded.error;
      this.#options.engine.metrics.rejected(decoded.error.code);
      this.#logInvalidFrameOnce(message);
      if (this.#phase === 'awaitingHello') {
        this.#fail(decoded.error.code, `expected hello: ${message}`, CLOSE_CODES.protocolError);
      } else {
        this.#sendError(decoded.error.code, message, id);
      }
      return;
    }
    const frame = decoded.frame;
    if (this.#phase === 'awaitingHello') {
      this.#onHello(frame);
      return;
    }
    this.#dispatch(frame);
  }

  #onHello(frame: ClientFrame): void {
    clearTimeout(this.#helloTimer);
    const verdict = judgeHello(frame, {
      access: this.#access,
      peers: this.#options.peers,
      accepting: this.#options.accepting,
    });
    if (!verdict.ok) {
      this.#fail(verdict.code, verdict.message, verdict.closeCode);
      return;
    }
    const { hello, peer } = verdict;
    if (peer !== undefined) {
      this.#engine = peer.service;
      this.#peerAdmin = peer.service;
      this.#untrackPeer = this.#options.peers?.sessions?.track(peer.queue, () =>
        this.close(CLOSE_CODES.tryAgainLater, `queue ${peer.queue} changed hands`),
      );
    }
    if (hello.clientId !== undefined) this.#clientId = hello.clientId;
    this.#ownClientId = hello.clientId;
    this.#frameBudgetBytes = deliveryFrameBudget(hello.maxFrameBytes);
    this.#phase = 'open';
    // A client session (never one between brokers) that asks for the queue map gets it, on a
    // broker that has one: an older client never asks, and goes on being forwarded for.
    const queueMap =
      peer === undefined && hello.features?.includes(QUEUE_MAP_FEATURE) ? this.#options.queueMap : undefined;
    // Owned scope only where there is a map to follow the owners by (a spread store, a stream).
    const ownedScope = peer === undefined && this.#options.queueMap !== undefined;
    this.#ownedSubscriptions = ownedScope && hello.features?.includes(OWNED_SUBSCRIPTIONS_FEATURE) === true;
    this.#ownedReceives = ownedScope && hello.features?.includes(OWNED_RECEIVES_FEATURE) === true;
    this.#creditLending =
      this.#ownedSubscriptions && hello.features?.includes(CREDIT_LENDING_FEATURE) === true;
    const features = [
      ...(peer !== undefined && hello.features?.includes(ADMIN_CALLS_FEATURE) ? [ADMIN_CALLS_FEATURE] : []),
      ...(queueMap === undefined ? [] : [QUEUE_MAP_FEATURE]),
      ...(this.#ownedSubscriptions ? [OWNED_SUBSCRIPTIONS_FEATURE] : []),
      ...(this.#creditLending ? [CREDIT_LENDING_FEATURE] : []),
      ...(this.#ownedReceives ? [OWNED_RECEIVES_FEATURE] : []),
    ];
    this.#send({
      type: 'welcome',
      protocolVersion: PROTOCOL_VERSION,
      sessionId: this.id,
      maxBodyBytes: this.#options.maxBodyBytes,
      maxFrameBytes: this.#options.maxFrameBytes,
      ...(features.length === 0 ? {} : { features }),
    });
    if (queueMap !== undefined) {
      const tell = () => {
        const map = queueMap.current();
        if (map !== undefined) this.#send(map);
      };
      this.#unwatchQueueMap = queueMap.onChange(tell);
      tell();
    }
  }

  #dispatch(frame: ClientFrame): void {
    if (frame.type === 'hello') {
      this.#sendError(ERROR_CODES.BAD_REQUEST.code, 'hello was already received on this session');
      return;
    }
    if (frame.type === 'credit') {
      // Credit for a subscription of another session is ignored like an unknown one.
      if (this.#subscriptions.has(frame.subscriptionId))
        this.#engine.credit(frame.subscriptionId, frame.credits);
      return;
    }
    const id = frame.id;
    const draining = this.#pipeline.draining();
    if (draining !== undefined) {
      this.#sendFailure(draining, id);
      return;
    }
    if (this.#peer) {
      this.#run(frame, { ok: true, principal: onBehalfOf(frame)?.principal });
      return;
    }
    if (onBehalfOf(frame) !== undefined || frame.type === 'adminCall') {
      const what = frame.type === 'adminCall' ? 'adminCall' : 'onBehalfOf';
      this.#sendError(ERROR_CODES.BAD_REQUEST.code, `${what} is only for sessions between brokers`, id);
      return;
    }
    const verdict = this.#pipeline.admit(frame, this.#access, this.#usage);
    if (!verdict.ok) {
      this.#sendFailure(verdict.error, id);
      if (verdict.endSession) this.close(CLOSE_CODES.policyViolation, verdict.error.message.slice(0, 120));
      return;
    }
    this.#run(frame, verdict);
  }

  /** Work on a request the session may make, and answer it. */
  #run(frame: RequestFrame, verdict: FrameVerdict & { ok: true }): void {
    const id = frame.id;
    // Counted until the answer is sent: a session closing once idle has sent every answer.
    void this.#pipeline.run(frame, this.#usage, () =>
      this.#handle(frame, verdict)
        .then((answer) => this.#send(answer))
        .catch((error: unknown) => this.#sendFailure(error, id)),
    );
  }

  async #handle(frame: RequestFrame, verdict: FrameVerdict & { ok: true }): Promise<BrokerFrame> {
    const engine = this.#engine;
    const settledBy = verdict.principal;
    const behalf = onBehalfOf(frame);
    const consumerId = behalf?.consumerId ?? this.#clientId;
    switch (frame.type) {
      case 'send': {
        const receipts = await sendAllowed(
          frame.messages,
          verdict.forbidden,
          (message) => message.messageId,
          (messages) => engine.send(messages),
        );
        return { type: 'sendResult', id: frame.id, receipts };
      }
      case 'receive':
        if (frame.scope !== undefined && !this.#ownedReceives) {
          throw BrokerError.of(
            'BAD_REQUEST',
            `scope '${frame.scope}' needs the ${OWNED_RECEIVES_FEATURE} feature, not granted on this session`,
          );
        }
        return {
          type: 'messages',
          id: frame.id,
          messages: await engine.receive({
            group: frame.group,
            subscriptions: frame.subscriptions,
            maxMessages: frame.maxMessages,
            // The answer is one frame: it must stay below what the client reads.
            maxBytes: Math.min(frame.maxBytes ?? Number.POSITIVE_INFINITY, this.#frameBudgetBytes),
            invisibleDurationMs: frame.invisibleDurationMs,
            awaitDurationMs: frame.awaitDurationMs,
            consumerId,
            signal: this.#ended.signal,
            scope: frame.scope,
          }),
        };
      case 'ack':
        return {
          type: 'settled',
          id: frame.id,
          failures: settleFailures(await engine.ack(frame.receiptHandles, settledBy)),
        };
      case 'changeInvisibleDuration': {
        const changed = await engine.changeInvisibleDuration(frame.receiptHandle, frame.invisibleDurationMs);
        return { type: 'invisibilityChanged', id: frame.id, ...changed };
      }
      case 'register':
        await engine.register(frame.group, frame.subscriptions);
        return { type: 'ok', id: frame.id };
      case 'subscribe': {
        if (frame.scope !== undefined && !this.#ownedSubscriptions) {
          throw BrokerError.of(
            'BAD_REQUEST',
            `scope '${frame.scope}' needs the ${OWNED_SUBSCRIPTIONS_FEATURE} feature, not granted on this session`,
          );
        }
        const subscriptionId = await engine.subscribe({
          group: frame.group,
          subscriptions: frame.subscriptions,
          maxCachedMessages: frame.maxCachedMessages,
          maxCachedBytes: frame.maxCachedBytes,
          consumerId,
          clientId: this.#peer ? behalf?.clientId : this.#ownClientId,
          scope: frame.scope,
          sink: (id, messages) => this.#deliver(id, messages),
          // A forwarding broker lends its client's credit; a client granted `creditLending` lends
          // its own to its owned-scope subscriptions, one per owner.
          ...(this.#peer || (this.#creditLending && frame.scope === 'owned')
            ? {
                lender: {
                  wanted: (subscriptionId, ready, late) =>
                    this.#send({ type: 'creditWanted', subscriptionId, ready, late }),
                  returned: (subscriptionId, credits) =>
                    this.#send({ type: 'creditReturned', subscriptionId, credits }),
                },
              }
            : {}),
        });
        if (this.#phase === 'closed') {
          // The session ended while the subscription was being made: nothing will end it later.
          engine.endSubscriptions([subscriptionId]);
          throw BrokerError.of('BROKER_UNAVAILABLE', 'the session closed');
        }
        this.#subscriptions.add(subscriptionId);
        return { type: 'subscribed', id: frame.id, subscriptionId };
      }
      case 'unsubscribe':
        await this.#subscriptions.unsubscribe(engine, frame.subscriptionId, frame.release === true);
        return { type: 'ok', id: frame.id };
      case 'nack':
        return {
          type: 'settled',
          id: frame.id,
          failures: settleFailures(await engine.nack(frame.items, settledBy)),
        };
      case 'release':
        return {
          type: 'settled',
          id: frame.id,
          failures: settleFailures(await engine.release(frame.receiptHandles, settledBy)),
        };
      case 'adminCall': {
        // #dispatch lets it through on sessions between brokers only, which all have their queue.
        const admin = this.#peerAdmin as AdminService;
        // A DLQ page is cut to what one frame of the forwarding broker carries.
        const value = await answerAdminCall(admin, frame.call, frame.args, this.#frameBudgetBytes);
        return { type: 'adminAnswer', id: frame.id, ...(value === undefined ? {} : { value }) };
      }
    }
  }

  /** A misbehaving client is worth one warning, without a stack trace: not one log line per frame. */
  #logInvalidFrameOnce(reason: string): void {
    if (this.#invalidFrameLogged) return;
    this.#invalidFrameLogged = true;
    this.#options.log.warn(
      { session: this.id, clientId: this.#clientId, reason },
      'client sent an invalid frame; later ones on this session are answered and counted, not logged',
    );
  }

  #sendFailure(error: unknown, id: number): void {
    const failure = this.#pipeline.failed(error, { session: this.id });
    this.#sendError(failure.code, failure.message, id, failure.details);
  }

  #sendError(
    code: number,
    message: string,
    id?: number,
    details?: Readonly<Record<string, string | number | boolean>>,
  ): void {
    this.#send({
      type: 'error',
      ...(id === undefined ? {} : { id }),
      code,
      message,
      ...(details === undefined ? {} : { details: { ...details } }),
    });
  }

  /** Answer with an error, then close: used when the session cannot go on. */
  #fail(code: number, message: string, closeCode: number): void {
    this.#sendError(code, message);
    this.close(closeCode, message.slice(0, 120));
  }

  /** A subscription's deliveries, in as many frames as keep each within the client's frame limit. */
  #deliver(subscriptionId: number, messages: DeliveredMessage[]): void {
    for (const run of splitDeliveries(messages, messages.length, this.#frameBudgetBytes)) {
      this.#send({ type: 'deliver', subscriptionId, messages: run });
    }
  }

  #send(frame: BrokerFrame): void {
    if (this.#phase === 'closed' || !this.#channel.open) return;
    this.#channel.send(encodeFrame(frame));
  }

  #onClose(): void {
    if (this.#phase === 'closed') return;
    // What the client sent before the connection ended is handled before its end is, as when no
    // frame waited: its acks count, and C2's release below sees what they left.
    this.#inbox.flush();
    this.#end();
  }

  /** The session's end, once: a frame the inbox flushed may have ended it already. */
  #end(): void {
    if (this.#phase === 'closed') return;
    this.#phase = 'closed';
    this.#untrackPeer?.();
    this.#unwatchQueueMap?.();
    clearTimeout(this.#helloTimer);
    this.#ended.abort();
    // C2: a consumer that disconnects releases its inflight messages.
    this.#subscriptions.endAll(this.#engine);
  }
}

function settleFailures(failures: readonly SettleFailure[]) {
  return failures.map(({ index, error }) => ({
    index,
    code: error.code,
    message: error.message,
    ...(error.details === undefined ? {} : { details: { ...error.details } }),
  }));
}

/** The client a session between brokers acts for in this frame, if it names one. */
function onBehalfOf(frame: RequestFrame): OnBehalfOf | undefined {
  return 'onBehalfOf' in frame ? frame.onBehalfOf : undefined;
}
