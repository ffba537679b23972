import {
  BrokerError,
  type BrokerFrame,
  type ClientRequestFrame,
  encodeFrame,
  type RicochetError,
} from '@ricochet/protocol';
import { abortedError, ClientError } from './client-error.js';
import { IdleWaiters } from './drain-with-timeout.js';
import type { FrameLink } from './transport.js';

/** The answer frame type of every request frame type. */
export const ANSWER_TYPES = {
  send: 'sendResult',
  register: 'ok',
  subscribe: 'subscribed',
  unsubscribe: 'ok',
  ack: 'settled',
  nack: 'settled',
  release: 'settled',
  receive: 'messages',
  changeInvisibleDuration: 'invisibilityChanged',
  // Sent only by a broker to another, never by this client; here so the table covers every request.
  adminCall: 'adminAnswer',
} as const satisfies Record<ClientRequestFrame['type'], BrokerFrame['type']>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A request frame as callers write it: the connection assigns the `id`. */
export type RequestFrameInput = DistributiveOmit<ClientRequestFrame, 'id'>;

/** The frame that answers a request of type `TType`, e.g. `SendResultFrame` for `'send'`. */
export type AnswerFrame<TType extends RequestFrameInput['type']> = Extract<
  BrokerFrame,
  { type: (typeof ANSWER_TYPES)[TType] }
>;

interface PendingRequest {
  readonly frame: RequestFrameInput;
  readonly answerType: BrokerFrame['type'];
  /** Assigned when the frame is written to a session; ids are scoped to one session. */
  id: number | undefined;
  settled: boolean;
  readonly resolve: (frame: BrokerFrame) => void;
  readonly reject: (error: RicochetError) => void;
  readonly timer: ReturnType<typeof setTimeout>;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * Every request a connection has not seen answered: the outgoing queue (made while no session
 * was open, in call order) and, apart from it, the in-flight table (written to the current
 * session, by `id`). A request leaves both exactly once, however it ends: answered, timed out,
 * aborted, or failed with its session or the connection. Its timeout counts from the call, so
 * time queued while reconnecting counts too.
 */
export class RequestTable {
  /** Requests waiting for a session, in call order. */
  readonly #outgoing = new Set<PendingRequest>();
  /** Requests written to the current session, by id, waiting for their answer. */
  readonly #inflight = new Map<number, PendingRequest>();
  readonly #drained = new IdleWaiters(() => this.#inflight.size === 0);
  #nextId = 0;

  /** Requests written to the current session and not answered yet. */
  get inflightCount(): number {
    return this.#inflight.size;
  }

  /**
   * Track `frame` until it is answered, `timeoutMs` passes (`TIMEOUT`) or `signal` fires
   * (`ABORTED`): written to `link` at once, or queued until {@link writeQueued} when no session
   * is open. Resolves with the answer frame; a broker `error` answer rejects with its BrokerError.
   */
  add(
    frame: RequestFrameInput,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    link: Pick<FrameLink, 'send'> | undefined,
  ): Promise<BrokerFrame> {
    return new Promise((resolve, reject) => {
      const pending: PendingRequest = {
        frame,
        answerType: ANSWER_TYPES[frame.type],
        id: undefined,
        settled: false,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#fail(
            pending,
            new ClientError('TIMEOUT', `no answer to the ${frame.type} request within ${timeoutMs} ms`),
          );
        }, timeoutMs),
        signal,
        onAbort: () => {
          if (signal) this.#fail(pending, abortedError(signal, `the ${frame.type} request`));
        },
      };
      signal?.addEventListener('abort', pending.onAbort, { once: true });
      if (link !== undefined) this.#write(link, pending);
      else this.#outgoing.add(pending);
    });
  }

  /** Write every queued request to the session that just opened on `link`, in call order. */
  writeQueued(link: Pick<FrameLink, 'send'>): void {
    // Deleting from a Set while iterating it is well defined: each entry is visited once.
    for (const pending of this.#outgoing) this.#write(link, pending);
  }

  /**
   * Settle the in-flight request `id` with `frame`: resolved with the expected answer, rejected
   * with a BrokerError for an `error` frame. No request: it timed out or was aborted before its
   * answer came, and the answer is dropped.
   * @returns the `PROTOCOL_ERROR` the request failed with when `frame` is not the answer it
   *   expects, for the caller to report.
   */
  answer(id: number, frame: BrokerFrame): ClientError | undefined {
    const pending = this.#inflight.get(id);
    if (pending === undefined) return undefined;
    if (frame.type === 'error') {
      this.#fail(pending, BrokerError.fromFrame(frame));
      return undefined;
    }
    if (frame.type !== pending.answerType) {
      const error = new ClientError(
        'PROTOCOL_ERROR',
        `the broker answered ${pending.frame.type} with ${frame.type}, not ${pending.answerType}`,
      );
      this.#fail(pending, error);
      return error;
    }
    if (this.#settle(pending)) pending.resolve(frame);
    return undefined;
  }

  /** Fail the in-flight request `id`, if there is one. */
  failInflight(id: number, error: RicochetError): void {
    const pending = this.#inflight.get(id);
    if (pending !== undefined) this.#fail(pending, error);
  }

  /** Fail every in-flight request: its session ended, or the connection stopped waiting. */
  failAllInflight(error: RicochetError): void {
    for (const pending of [...this.#inflight.values()]) this.#fail(pending, error);
  }

  /** Fail every queued request: the connection can carry none any more. */
  failAllQueued(error: RicochetError): void {
    for (const pending of [...this.#outgoing]) this.#fail(pending, error);
  }

  /** Resolves once no request is in flight. */
  whenDrained(): Promise<void> {
    return this.#drained.whenIdle();
  }

  #write(link: Pick<FrameLink, 'send'>, pending: PendingRequest): void {
    this.#outgoing.delete(pending);
    const id = this.#allocateId();
    pending.id = id;
    this.#inflight.set(id, pending);
    try {
      link.send(encodeFrame({ ...pending.frame, id } as ClientRequestFrame));
    } catch (cause) {
      this.#fail(pending, new ClientError('CONNECTION_CLOSED', 'the frame could not be written', { cause }));
    }
  }

  /** The next uint32 id, wrapping to 0, skipping ids still unanswered (only possible after a wrap). */
  #allocateId(): number {
    let id: number;
    do {
      id = this.#nextId;
      this.#nextId = (this.#nextId + 1) >>> 0;
    } while (this.#inflight.has(id));
    return id;
  }

  /** Take `pending` out of the queue and the table; false when it was already settled. */
  #settle(pending: PendingRequest): boolean {
    if (pending.settled) return false;
    pending.settled = true;
    clearTimeout(pending.timer);
    pending.signal?.removeEventListener('abort', pending.onAbort);
    this.#outgoing.delete(pending);
    if (pending.id !== undefined && this.#inflight.get(pending.id) === pending) {
      this.#inflight.delete(pending.id);
      this.#drained.check();
    }
    return true;
  }

  #fail(pending: PendingRequest, error: RicochetError): void {
    if (this.#settle(pending)) pending.reject(error);
  }
}
