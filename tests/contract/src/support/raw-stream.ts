import { connect, type Socket } from 'node:net';
import {
  type BrokerFrame,
  decodeBrokerFrame,
  encodeFrame,
  encodeStreamFrame,
  type Frame,
  StreamFrameReader,
} from '@ricochet/protocol';

/** Everything the broker wrote on one TCP connection, until it ended the connection. */
export interface StreamTranscript {
  readonly frames: BrokerFrame[];
  /** The close record, if the broker sent one before ending. */
  readonly close: { readonly code: number; readonly reason: string } | undefined;
}

/**
 * A misbehaving TCP client: raw bytes to the broker's TCP listener, for what the real clients
 * never send (broken length prefixes, oversized frames, text). It reads what the broker answers
 * with the protocol's own stream reader.
 */
export class RawStream implements AsyncDisposable {
  readonly #socket: Socket;
  readonly #frames: BrokerFrame[] = [];
  #close: StreamTranscript['close'];
  readonly #ended: Promise<void>;

  private constructor(socket: Socket) {
    this.#socket = socket;
    // Generous: the broker's frames to a test client are small.
    const reader = new StreamFrameReader(64 * 1024 * 1024);
    socket.on('data', (chunk: Buffer) => {
      for (const record of reader.push(chunk)) {
        if (record.type === 'frame') {
          const decoded = decodeBrokerFrame(record.bytes);
          if (!decoded.ok) throw new Error(`broker sent an undecodable frame: ${decoded.error.message}`);
          this.#frames.push(decoded.frame);
        } else if (record.type === 'close') this.#close = { code: record.code, reason: record.reason };
        else throw new Error(`broker broke the stream framing: ${JSON.stringify(record)}`);
      }
    });
    socket.on('error', () => {});
    this.#ended = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  /** Connect to `tcp://host:port`. */
  static async open(endpoint: string): Promise<RawStream> {
    const url = new URL(endpoint);
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    return new RawStream(socket);
  }

  sendBytes(bytes: Uint8Array | string): void {
    this.#socket.write(bytes);
  }

  /** Send anything shaped like a frame, valid or not, with its length prefix. */
  sendFrame(frame: Frame | Record<string, unknown>): void {
    this.#socket.write(encodeStreamFrame(encodeFrame(frame as Frame)));
  }

  /** Resolve with what the broker wrote, once it ended the connection. */
  async transcript(): Promise<StreamTranscript> {
    await this.#ended;
    return { frames: [...this.#frames], close: this.#close };
  }

  /** What the broker wrote so far. */
  get framesSoFar(): readonly BrokerFrame[] {
    return this.#frames;
  }

  get isOpen(): boolean {
    return !this.#socket.destroyed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#socket.destroy();
    await this.#ended;
  }
}
