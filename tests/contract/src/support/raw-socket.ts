import {
  type BrokerFrame,
  decodeBrokerFrame,
  encodeFrame,
  type Frame,
  PROTOCOL_VERSION,
  WEBSOCKET_PATH,
  WEBSOCKET_SUBPROTOCOL,
} from '@ricochet/protocol';
import WebSocket from 'ws';

/**
 * A misbehaving client: raw bytes over a real socket, for what the real clients never send
 * (malformed frames, wrong types). Frames it receives are queued for `next()`.
 */
export class RawSocket implements AsyncDisposable {
  readonly #socket: WebSocket;
  readonly #queue: BrokerFrame[] = [];
  readonly #waiting: ((frame: BrokerFrame) => void)[] = [];

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.on('message', (data: Buffer) => {
      const decoded = decodeBrokerFrame(data);
      if (!decoded.ok) throw new Error(`broker sent an undecodable frame: ${decoded.error.message}`);
      const waiter = this.#waiting.shift();
      if (waiter) waiter(decoded.frame);
      else this.#queue.push(decoded.frame);
    });
  }

  /** Open a session (handshake included). */
  static async open(endpoint: string): Promise<RawSocket> {
    const socket = new WebSocket(`${endpoint}${WEBSOCKET_PATH}`, [WEBSOCKET_SUBPROTOCOL]);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const raw = new RawSocket(socket);
    raw.sendFrame({ type: 'hello', protocolVersion: PROTOCOL_VERSION });
    const welcome = await raw.next();
    if (welcome.type !== 'welcome') throw new Error(`expected welcome, got ${welcome.type}`);
    return raw;
  }

  sendBytes(bytes: Uint8Array | string): void {
    this.#socket.send(bytes);
  }

  /** Send anything shaped like a frame, valid or not. */
  sendFrame(frame: Frame | Record<string, unknown>): void {
    this.#socket.send(encodeFrame(frame as Frame));
  }

  next(): Promise<BrokerFrame> {
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  get isOpen(): boolean {
    return this.#socket.readyState === WebSocket.OPEN;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((resolve) => this.#socket.once('close', resolve));
    this.#socket.close();
    await closed;
  }
}
