import { type BrokerFrame, encodeFrame, type HelloFrame } from '@ricochet/protocol';
import type { WebSocket } from 'ws';

/** One client connection to a {@link FakeBroker} that completed the handshake. */
export class FakeSession {
  readonly sessionId: string;
  readonly hello: HelloFrame;
  /** Resolves with the close code and reason when the connection ends. */
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>;
  readonly #socket: WebSocket;

  constructor(sessionId: string, hello: HelloFrame, socket: WebSocket) {
    this.sessionId = sessionId;
    this.hello = hello;
    this.#socket = socket;
    this.closed = new Promise((resolve) => {
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
  }

  send(frame: BrokerFrame): void {
    this.#socket.send(encodeFrame(frame));
  }

  /** Bytes as they are, for frames the protocol does not allow. */
  sendRaw(data: Uint8Array | string): void {
    this.#socket.send(data);
  }

  /** Cut the TCP connection without a closing handshake, like a crash or a network failure. */
  drop(): void {
    this.#socket.terminate();
  }

  close(code = 1001, reason = ''): void {
    this.#socket.close(code, reason);
  }
}
