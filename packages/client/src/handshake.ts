import {
  BrokerError,
  decodeBrokerFrame,
  encodeFrame,
  type HelloFrame,
  PROTOCOL_VERSION,
  WEBSOCKET_SUBPROTOCOL,
  type WelcomeFrame,
} from '@ricochet/protocol';
import { ClientError } from './client-error.js';
import { certificateErrorCode } from './tls-options.js';
import {
  describeCloseReason,
  detach,
  messageBytes,
  type WebSocketCloseEvent,
  type WebSocketErrorEvent,
  type WebSocketImplementation,
  type WebSocketLike,
  type WebSocketMessageEvent,
} from './web-socket.js';

/** What the broker said about the current (or, while reconnecting, the last) session. */
export interface SessionInfo {
  readonly sessionId: string;
  readonly protocolVersion: number;
  /** The broker's body limit; a producer refuses larger bodies locally. */
  readonly maxBodyBytes: number;
  /**
   * The largest WebSocket message the broker reads; a larger one closes the connection (1009), so
   * a producer splits its batches below it.
   */
  readonly maxFrameBytes: number;
}

/** What one connect attempt needs. */
export interface HandshakeOptions {
  /** The WebSocket URL, `endpoint` + `/v1/ws`. */
  readonly url: string;
  readonly hello: HelloFrame;
  readonly implementation: WebSocketImplementation;
  /** How long the attempt may take, from opening the socket to `welcome`. */
  readonly timeoutMs: number;
  /** Stops the attempt at once, rejecting with the signal's reason. */
  readonly signal: AbortSignal;
  /**
   * Takes the socket over once `welcome` arrived. Called inside the welcome's own message event,
   * before the attempt resolves: the broker may send the next frame in the same tick, and it must
   * find the session's handlers in place.
   */
  readonly onWelcome: (socket: WebSocketLike, welcome: WelcomeFrame) => void;
}

/** The session fields of a `welcome`. */
export function sessionInfoOf(welcome: WelcomeFrame): SessionInfo {
  return {
    sessionId: welcome.sessionId,
    protocolVersion: welcome.protocolVersion,
    maxBodyBytes: welcome.maxBodyBytes,
    maxFrameBytes: welcome.maxFrameBytes,
  };
}

/**
 * One connect attempt: open a socket, check that the broker selected `ricochet.v1`, send `hello`
 * and wait for `welcome`. A failed attempt closes its socket.
 *
 * @throws BrokerError with the broker's code when it refuses the handshake (`401`, `503`, …).
 * @throws ClientError `PROTOCOL_ERROR` when the server does not speak `ricochet.v1`,
 *   `CONNECTION_CLOSED` when the socket cannot open or closes first, `TIMEOUT` after `timeoutMs`.
 */
export function handshake(options: HandshakeOptions): Promise<void> {
  const { url, implementation, timeoutMs, signal } = options;
  return new Promise<void>((resolve, reject) => {
    let socket: WebSocketLike;
    try {
      socket = new implementation.create(url, WEBSOCKET_SUBPROTOCOL);
      socket.binaryType = implementation.binaryType;
    } catch (cause) {
      reject(new ClientError('CONNECTION_CLOSED', `cannot open a WebSocket to ${url}`, { cause }));
      return;
    }
    let socketError: unknown;
    const fail = (error: unknown): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      detach(socket);
      socket.close();
      reject(error);
    };
    const onAbort = (): void => fail(signal.reason);
    const timer = setTimeout(() => {
      fail(new ClientError('TIMEOUT', `no session with ${url} within ${timeoutMs} ms`));
    }, timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });

    socket.onopen = () => {
      // The broker must select our subprotocol; a server that ignores it is not a Ricochet broker.
      if (socket.protocol !== WEBSOCKET_SUBPROTOCOL) {
        fail(
          new ClientError(
            'PROTOCOL_ERROR',
            `the server selected the subprotocol '${socket.protocol}', not '${WEBSOCKET_SUBPROTOCOL}'`,
          ),
        );
        return;
      }
      socket.send(encodeFrame(options.hello));
    };
    socket.onmessage = (event: WebSocketMessageEvent) => {
      const bytes = messageBytes(event.data);
      const decoded = bytes === undefined ? undefined : decodeBrokerFrame(bytes);
      if (decoded === undefined || !decoded.ok) {
        const why = decoded === undefined ? 'a text message' : decoded.error.message;
        fail(new ClientError('PROTOCOL_ERROR', `the broker's first frame is not welcome: ${why}`));
        return;
      }
      const frame = decoded.frame;
      if (frame.type === 'error') {
        // A refused handshake (400, 401, 503, …): retried or not by the code's catalogue flag.
        fail(BrokerError.fromFrame(frame));
        return;
      }
      if (frame.type !== 'welcome' || frame.protocolVersion !== PROTOCOL_VERSION) {
        fail(
          new ClientError(
            'PROTOCOL_ERROR',
            frame.type === 'welcome'
              ? `the broker speaks protocol version ${frame.protocolVersion}, not ${PROTOCOL_VERSION}`
              : `the broker's first frame is ${frame.type}, not welcome`,
          ),
        );
        return;
      }
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      options.onWelcome(socket, frame);
      resolve();
    };
    socket.onerror = (event: WebSocketErrorEvent) => {
      // The close event follows; keep what the error said for its message.
      socketError = event.error ?? event.message;
    };
    socket.onclose = (event: WebSocketCloseEvent) => {
      const certificateCode = certificateErrorCode(socketError);
      if (certificateCode !== undefined) {
        // Not retried: every attempt would meet the same certificate.
        const why = socketError instanceof Error ? socketError.message : certificateCode;
        fail(
          new ClientError(
            'TLS_ERROR',
            `the TLS certificate of ${url} was refused: ${why} (${certificateCode}); trust its authority with the tls option, e.g. { tls: { ca } }`,
            { cause: socketError },
          ),
        );
        return;
      }
      fail(
        new ClientError(
          'CONNECTION_CLOSED',
          `the connection to ${url} closed before welcome (code ${event.code}${describeCloseReason(event.reason, socketError)})`,
          socketError === undefined ? {} : { cause: socketError },
        ),
      );
    };
  });
}
