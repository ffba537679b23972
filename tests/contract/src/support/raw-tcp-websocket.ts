import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '@ricochet/protocol';

/** WebSocket opcodes (RFC 6455 §5.2). */
export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8 } as const;

/**
 * A WebSocket written by hand over a plain TCP socket, for what no real client does: a frame
 * header announcing more than it sends, a fragment that never gets its last part. It reads the
 * broker's frames only far enough to find the close code.
 */
export class RawTcpWebSocket {
  readonly socket: Socket;
  readonly closed: Promise<{ closeCode: number | undefined }>;
  #closeCode: number | undefined;
  #incoming = Buffer.alloc(0);

  private constructor(socket: Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) =>
      socket.once('close', () => resolve({ closeCode: this.#closeCode })),
    );
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', () => {});
  }

  /** Connect to `port` on 127.0.0.1 and complete the upgrade (101) by hand. */
  static async open(port: number): Promise<RawTcpWebSocket> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.write(upgradeRequest());
    const response = await new Promise<Buffer>((resolve, reject) => {
      let received = Buffer.alloc(0);
      const onData = (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        const end = received.indexOf('\r\n\r\n');
        if (end >= 0) {
          socket.off('data', onData);
          if (received.length > end + 4) socket.unshift(received.subarray(end + 4));
          resolve(received.subarray(0, end));
        }
      };
      socket.on('data', onData);
      socket.once('close', () => reject(new Error('closed during the upgrade')));
    });
    if (!response.toString('latin1').startsWith('HTTP/1.1 101')) {
      socket.destroy();
      throw new Error(`upgrade refused: ${response.toString('latin1').split('\r\n')[0]}`);
    }
    return new RawTcpWebSocket(socket);
  }

  /** Write one masked frame; `announcedLength` makes its header announce more than `payload` carries. */
  writeFrame(
    opcode: number,
    payload: Uint8Array,
    options: { fin?: boolean; announcedLength?: number } = {},
  ): void {
    this.socket.write(maskedFrame(opcode, payload, options.fin ?? true, options.announcedLength));
  }

  destroy(): void {
    this.socket.destroy();
  }

  #read(chunk: Buffer): void {
    this.#incoming = Buffer.concat([this.#incoming, chunk]);
    // Server frames are unmasked; only short frames matter here (a close frame is at most 125 bytes).
    while (this.#incoming.length >= 2) {
      const opcode = (this.#incoming[0] as number) & 0x0f;
      const length7 = (this.#incoming[1] as number) & 0x7f;
      const headerLength = length7 === 126 ? 4 : length7 === 127 ? 10 : 2;
      if (this.#incoming.length < headerLength) return;
      const length =
        length7 === 126
          ? this.#incoming.readUInt16BE(2)
          : length7 === 127
            ? Number(this.#incoming.readBigUInt64BE(2))
            : length7;
      if (this.#incoming.length < headerLength + length) return;
      const payload = this.#incoming.subarray(headerLength, headerLength + length);
      if (opcode === OPCODE.close && payload.length >= 2) this.#closeCode = payload.readUInt16BE(0);
      this.#incoming = this.#incoming.subarray(headerLength + length);
    }
  }
}

/** The upgrade request a WebSocket client sends, whole. */
export function upgradeRequest(): string {
  return [
    `GET ${WEBSOCKET_PATH} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    'Sec-WebSocket-Version: 13',
    `Sec-WebSocket-Protocol: ${WEBSOCKET_SUBPROTOCOL}`,
    '',
    '',
  ].join('\r\n');
}

/** A client frame (masked, RFC 6455 §5.3). */
export function maskedFrame(
  opcode: number,
  payload: Uint8Array,
  fin: boolean,
  announcedLength?: number,
): Buffer {
  const length = announcedLength ?? payload.length;
  const first = (fin ? 0x80 : 0) | opcode;
  let header: Buffer;
  if (length < 126) header = Buffer.from([first, 0x80 | length]);
  else if (length < 65_536) {
    header = Buffer.alloc(4);
    header.writeUInt8(first, 0);
    header.writeUInt8(0x80 | 126, 1);
    header.writeUInt16BE(length, 2);
  } else {
    header = Buffer.alloc(10);
    header.writeUInt8(first, 0);
    header.writeUInt8(0x80 | 127, 1);
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  const mask = randomBytes(4);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i] = (masked[i] as number) ^ (mask[i % 4] as number);
  return Buffer.concat([header, mask, masked]);
}
