import {
  type BrokerFrame,
  type CreditReturnedFrame,
  type CreditWantedFrame,
  type DeliverFrame,
  decodeBrokerFrame,
  type ErrorFrame,
  type QueueMapFrame,
} from '@ricochet/protocol';
import { ClientError } from './client-error.js';
import type { RequestTable } from './request-table.js';

/** A broker frame that answers no request: `deliver`, `queueMap`, `creditWanted`, `creditReturned`, and `error` without `id`. */
export interface UnsolicitedFrames {
  readonly deliver: DeliverFrame;
  readonly error: ErrorFrame;
  /** Sent only on a session granted the `queueMap` feature (`hello.features`). */
  readonly queueMap: QueueMapFrame;
  /** Sent only on a session granted the `creditLending` feature, for an owned-scope subscription. */
  readonly creditWanted: CreditWantedFrame;
  /** As `creditWanted`. */
  readonly creditReturned: CreditReturnedFrame;
}

/** The type of an {@link UnsolicitedFrames} frame. */
export type UnsolicitedFrameType = keyof UnsolicitedFrames;

type FrameHandler = (frame: never) => void;

/** Options of {@link FrameRouter}. */
export interface FrameRouterOptions {
  /** Where answers go, by their `id`. */
  readonly requests: RequestTable;
  /** Told of every frame this client cannot use; see `ConnectionOptions.onProtocolError`. */
  readonly onProtocolError: (error: ClientError) => void;
  /** Told when a frame listener, or `onProtocolError` itself, throws. */
  readonly onHandlerError: (error: unknown) => void;
}

/**
 * Routes the messages of an open session: an answer to the request its `id` names, `deliver` and
 * id-less `error` frames to their listeners. What it cannot use (a text message, an undecodable
 * frame, a second `welcome`, an answer of the wrong type) is reported as a `PROTOCOL_ERROR` and
 * otherwise ignored, failing the request it names when its `id` can be read (docs/protocol): one
 * bad frame does not end the session.
 */
export class FrameRouter {
  readonly #options: FrameRouterOptions;
  readonly #handlers = new Map<UnsolicitedFrameType, Set<FrameHandler>>();

  constructor(options: FrameRouterOptions) {
    this.#options = options;
  }

  /**
   * Call `handler` with every unsolicited frame of `type`, in arrival order.
   * @returns a function that removes the handler.
   */
  onFrame<TType extends UnsolicitedFrameType>(
    type: TType,
    handler: (frame: UnsolicitedFrames[TType]) => void,
  ): () => void {
    let handlers = this.#handlers.get(type);
    if (handlers === undefined) {
      handlers = new Set();
      this.#handlers.set(type, handlers);
    }
    const stored = handler as FrameHandler;
    handlers.add(stored);
    return () => {
      handlers.delete(stored);
    };
  }

  /** Report something the link received that cannot be a frame, e.g. `'a text message'`. */
  unreadable(description: string): void {
    this.#reportProtocolError(new ClientError('PROTOCOL_ERROR', `the broker sent ${description}`));
  }

  /** Route one frame's bytes. */
  route(bytes: Uint8Array): void {
    const decoded = decodeBrokerFrame(bytes);
    if (!decoded.ok) {
      const error = new ClientError(
        'PROTOCOL_ERROR',
        `the broker sent an undecodable frame: ${decoded.error.message}`,
        { cause: decoded.error },
      );
      this.#reportProtocolError(error);
      if (decoded.error.id !== undefined) this.#options.requests.failInflight(decoded.error.id, error);
      return;
    }
    const frame = decoded.frame;
    switch (frame.type) {
      case 'deliver':
        this.#emit('deliver', frame);
        return;
      case 'queueMap':
        this.#emit('queueMap', frame);
        return;
      case 'welcome':
        this.#reportProtocolError(new ClientError('PROTOCOL_ERROR', 'the broker sent a second welcome'));
        return;
      case 'creditWanted':
        this.#emit('creditWanted', frame);
        return;
      case 'creditReturned':
        this.#emit('creditReturned', frame);
        return;
      case 'error':
        if (frame.id === undefined) this.#emit('error', frame);
        else this.#answer(frame.id, frame);
        return;
      default:
        this.#answer(frame.id, frame);
    }
  }

  #answer(id: number, frame: BrokerFrame): void {
    const mismatch = this.#options.requests.answer(id, frame);
    if (mismatch !== undefined) this.#reportProtocolError(mismatch);
  }

  #emit<TType extends UnsolicitedFrameType>(type: TType, frame: UnsolicitedFrames[TType]): void {
    const handlers = this.#handlers.get(type);
    if (handlers === undefined) return;
    for (const handler of handlers) {
      try {
        (handler as (frame: UnsolicitedFrames[TType]) => void)(frame);
      } catch (error) {
        this.#options.onHandlerError(error);
      }
    }
  }

  #reportProtocolError(error: ClientError): void {
    try {
      this.#options.onProtocolError(error);
    } catch (thrown) {
      this.#options.onHandlerError(thrown);
    }
  }
}
