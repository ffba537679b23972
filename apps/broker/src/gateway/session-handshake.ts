import { type ClientFrame, ERROR_CODES, PROTOCOL_VERSION } from '@ricochet/protocol';
import type { BrokerService } from '../engine/index.js';
import { CLOSE_CODES } from './close-codes.js';
import { isPeerToken, type PeerAccess } from './peer-access.js';
import type { SessionAccess } from './session-access.js';

type HelloFrame = Extract<ClientFrame, { type: 'hello' }>;

/** What a session's first frame decides: it goes on (as a client's, or another broker's for one queue), or it ends. */
export type HelloVerdict =
  | {
      readonly ok: true;
      readonly hello: HelloFrame;
      /** A session between brokers (`hello.queue`): the queue, and the service of it this broker owns. */
      readonly peer?: { readonly queue: number; readonly service: BrokerService };
    }
  | {
      readonly ok: false;
      /** The error frame's code and message, and the close code the session ends with. */
      readonly code: number;
      readonly message: string;
      readonly closeCode: number;
    };

/** What a handshake is judged against. */
export interface HandshakeContext {
  /** The session's principal check (`hello.token`); it remembers who the session is. */
  readonly access: SessionAccess;
  /** Sessions between brokers; without it, every `hello.queue` is refused. */
  readonly peers: PeerAccess | undefined;
  /** Whether the broker still takes new work (false while draining). */
  readonly accepting: () => boolean;
}

/**
 * Judge a session's first frame, in this order: it is a `hello`, in this broker's protocol
 * version; from a client, with a token the principals accept (DESIGN.md §7), or from another
 * broker (`hello.queue`), with the cluster's peer token, for a queue this broker serves; and the
 * broker still takes new work. Any refusal ends the session.
 */
export function judgeHello(frame: ClientFrame, context: HandshakeContext): HelloVerdict {
  if (frame.type !== 'hello') {
    return refused(ERROR_CODES.BAD_REQUEST.code, `the first frame must be hello, got ${frame.type}`);
  }
  if (frame.protocolVersion !== PROTOCOL_VERSION) {
    return refused(
      ERROR_CODES.BAD_REQUEST.code,
      `protocol version ${frame.protocolVersion} is not supported; this broker speaks ${PROTOCOL_VERSION}`,
    );
  }
  let peer: { readonly queue: number; readonly service: BrokerService } | undefined;
  if (frame.queue !== undefined) {
    const { peers } = context;
    if (peers === undefined || !isPeerToken(peers, frame.token)) {
      return refused(
        ERROR_CODES.UNAUTHORIZED.code,
        "a session between brokers needs the cluster's peer token",
        CLOSE_CODES.policyViolation,
      );
    }
    const service = peers.queueService(frame.queue);
    if (service === undefined) {
      return refused(
        ERROR_CODES.BROKER_UNAVAILABLE.code,
        `this broker does not serve queue ${frame.queue}`,
        CLOSE_CODES.tryAgainLater,
      );
    }
    peer = { queue: frame.queue, service };
  } else {
    const refusal = context.access.hello(frame.token);
    if (refusal !== undefined)
      return refused(ERROR_CODES.UNAUTHORIZED.code, refusal, CLOSE_CODES.policyViolation);
  }
  if (!context.accepting()) {
    return refused(
      ERROR_CODES.BROKER_UNAVAILABLE.code,
      'the broker is shutting down',
      CLOSE_CODES.tryAgainLater,
    );
  }
  return peer === undefined ? { ok: true, hello: frame } : { ok: true, hello: frame, peer };
}

function refused(code: number, message: string, closeCode: number = CLOSE_CODES.protocolError): HelloVerdict {
  return { ok: false, code, message, closeCode };
}
