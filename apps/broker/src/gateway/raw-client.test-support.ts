import {
  type BrokerFrame,
  type ClientFrame,
  type ClientRequestFrame,
  decodeBrokerFrame,
  encodeFrame,
  PROTOCOL_VERSION,
  WEBSOCKET_PATH,
  WEBSOCKET_SUBPROTOCOL,
} from '@ricochet/protocol';
import WebSocket from 'ws';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type DeliverFrame = Extract<BrokerFrame, { type: 'deliver' }>;

/**
 * A bare protocol client for the broker's own tests: frames in, frames out, nothing else. The
 * real clients live in @ricochet/client and friends; contract tests use those.
 */
export class RawClient {
  readonly socket: WebSocket;
  readonly #frames: BrokerFrame[] = [];
  readonly #waiters: { match: (frame: BrokerFrame) => boolean; resolve: (frame: BrokerFrame) => void }[] = [];
  #nextId = 1;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data) => {
      const decoded = decodeBrokerFrame(data as Buffer);
      if (!decoded.ok) throw new Error(`broker sent an invalid frame: ${decoded.error.message}`);
      const waiter = this.#waiters.find((w) => w.match(decoded.frame));
      if (waiter) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve(decoded.frame);
      } else this.#frames.push(decoded.frame);
    });
  }

  /** Connect and complete the handshake unless `hello` is false. */
  static async connect(
    url: string,
    options: {
      hello?: boolean;
      token?: string;
      protocols?: string[];
      /** `hello.clientId` and `hello.queue` (a session between brokers). */
      clientId?: string;
      queue?: number;
    } = {},
  ): Promise<RawClient> {
    const socket = new WebSocket(`${url}${WEBSOCKET_PATH}`, options.protocols ?? [WEBSOCKET_SUBPROTOCOL]);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const client = new RawClient(socket);
    if (options.hello !== false) {
      client.sendFrame({
        type: 'hello',
        protocolVersion: PROTOCOL_VERSION,
        ...(options.token ? { token: options.token } : {}),
        ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
        ...(options.queue === undefined ? {} : { queue: options.queue }),
      });
      const welcome = await client.next();
      if (welcome.type !== 'welcome') throw new Error(`expected welcome, got ${JSON.stringify(welcome)}`);
    }
    return client;
  }

  sendFrame(frame: ClientFrame): void {
    this.socket.send(encodeFrame(frame));
  }

  sendBytes(bytes: Uint8Array | string): void {
    this.socket.send(bytes);
  }

  /** Send a request with a fresh id and wait for the frame that answers it. */
  async request(frame: DistributiveOmit<ClientRequestFrame, 'id'>): Promise<BrokerFrame> {
    const id = this.#nextId++;
    const answer = this.next((candidate) => 'id' in candidate && candidate.id === id);
    this.sendFrame({ ...frame, id } as unknown as ClientFrame);
    return answer;
  }

  /** The next frame (matching `match`), already received or still to come. */
  next(match: (frame: BrokerFrame) => boolean = () => true): Promise<BrokerFrame> {
    const index = this.#frames.findIndex(match);
    if (index >= 0) return Promise.resolve(this.#frames.splice(index, 1)[0] as BrokerFrame);
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }

  /** Subscribe for push deliveries; fails unless the broker answers `subscribed`. */
  async subscribe(
    group: string,
    subscriptions: Readonly<Record<string, string>>,
    maxCachedMessages: number,
  ): Promise<number> {
    const answer = await this.request({ type: 'subscribe', group, subscriptions, maxCachedMessages });
    if (answer.type !== 'subscribed') throw new Error(`expected subscribed, got ${JSON.stringify(answer)}`);
    return answer.subscriptionId;
  }

  /** The next `deliver` frame, already received or still to come. */
  async nextDelivery(): Promise<DeliverFrame> {
    const frame = await this.next((candidate) => candidate.type === 'deliver');
    if (frame.type !== 'deliver') throw new Error('expected deliver');
    return frame;
  }

  /** Resolves with the close code when the broker closes the connection. */
  closed(): Promise<number> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve(1006);
    return new Promise((resolve) => this.socket.once('close', (code) => resolve(code)));
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    const closed = this.closed();
    this.socket.close();
    await closed;
  }
}
