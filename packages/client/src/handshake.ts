import {
  BrokerError,
  decodeBrokerFrame,
  encodeFrame,
  type HelloFrame,
  PROTOCOL_VERSION,
  type WelcomeFrame,
} from '@ricochet/protocol';
import { ClientError } from './client-error.js';
import { openingFailure } from './link-failure.js';
import type { FrameLink, LinkCloseEvent, Transport } from './transport.js';
import { describeCloseReason } from './web-socket.js';

/** How long a failed attempt waits for its link to close before it stops waiting. */
const FAILED_ATTEMPT_CLOSE_TIMEOUT_MS = 1_000;

/** The close code a client uses for a link it gives up (a normal closure). */
const NORMAL_CLOSURE = 1000;

/** What the broker said about the current (or, while reconnecting, the last) session. */
export interface SessionInfo {
  /**
   * The endpoint the session runs on, as the `endpoint` option gave it (one entry of a list):
   * where a client with several brokers is connected.
   */
  readonly endpoint: string;
  readonly sessionId: string;
  readonly protocolVersion: number;
  /** The broker's body limit; a producer refuses larger bodies locally. */
  readonly maxBodyBytes: number;
  /**
   * The largest frame the broker reads; a larger one closes the connection (1009), so a producer
   * splits its batches below it.
   */
  readonly maxFrameBytes: number;
  /** The features of `hello.features` the broker granted; empty from a broker that predates them. */
  readonly features: readonly string[];
}

/** What one connect attempt needs. */
export interface HandshakeOptions {
  readonly transport: Transport;
  readonly hello: HelloFrame;
  /** How long the attempt may take, from opening the link to `welcome`. */
  readonly timeoutMs: number;
  /** Stops the attempt at once, rejecting with the signal's reason. */
  readonly signal: AbortSignal;
  /**
   * Takes the link over once `welcome` arrived. Called inside the welcome's own frame event,
   * before the attempt resolves: the broker may send the next frame in the same tick, and it must
   * find the session's listener in place.
   */
  readonly onWelcome: (link: FrameLink, welcome: WelcomeFrame) => void;
}

/** The session fields of a `welcome` that came from `endpoint`. */
export function sessionInfoOf(welcome: WelcomeFrame, endpoint: string): SessionInfo {
  return {
    endpoint,
    sessionId: welcome.sessionId,
    protocolVersion: welcome.protocolVersion,
    maxBodyBytes: welcome.maxBodyBytes,
    maxFrameBytes: welcome.maxFrameBytes,
    features: welcome.features ?? [],
  };
}

/**
 * One connect attempt, the same on every transport: open a link, send `hello` and wait for
 * `welcome`. A failed attempt closes its link.
 *
 * @throws BrokerError with the broker's code when it refuses the handshake (`401`, `503`, …).
 * @throws ClientError `PROTOCOL_ERROR` when the peer is not a Ricochet broker,
 *   `CONNECTION_CLOSED` when the link cannot open or closes first, `TLS_ERROR` when the broker's
 *   certificate is refused, `TIMEOUT` after `timeoutMs`.
 */
export async function handshake(options: HandshakeOptions): Promise<void> {
  const { transport, timeoutMs, signal } = options;
  const attempt = new AbortController();
  const timer = setTimeout(() => {
    attempt.abort(new ClientError('TIMEOUT', `no session with ${transport.address} within ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = (): void => attempt.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  try {
    const link = await transport.connect({ signal: attempt.signal });
    await awaitWelcome(link, options, attempt.signal);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

/** Send `hello` on `link` and settle with the broker's first frame. */
function awaitWelcome(link: FrameLink, options: HandshakeOptions, attempt: AbortSignal): Promise<void> {
  const address = options.transport.address;
  return new Promise<void>((resolve, reject) => {
    const fail = (error: unknown): void => {
      attempt.removeEventListener('abort', onAbort);
      void link.close(NORMAL_CLOSURE, '', FAILED_ATTEMPT_CLOSE_TIMEOUT_MS);
      reject(error);
    };
    const onAbort = (): void => fail(attempt.reason);
    if (attempt.aborted) {
      onAbort();
      return;
    }
    attempt.addEventListener('abort', onAbort, { once: true });
    link.listen({
      onFrame: (bytes) => {
        const decoded = decodeBrokerFrame(bytes);
        if (!decoded.ok) {
          fail(
            new ClientError(
              'PROTOCOL_ERROR',
              `the broker's first frame is not welcome: ${decoded.error.message}`,
            ),
          );
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
        attempt.removeEventListener('abort', onAbort);
        options.onWelcome(link, frame);
        resolve();
      },
      onUnreadable: (description) => {
        fail(new ClientError('PROTOCOL_ERROR', `the broker's first frame is not welcome: ${description}`));
      },
      onClose: (event: LinkCloseEvent) => {
        fail(
          openingFailure(
            address,
            `the connection to ${address} closed before welcome (code ${event.code}${describeCloseReason(event.reason, event.error)})`,
            event.error,
          ),
        );
      },
    });
    link.send(encodeFrame(options.hello));
  });
}
