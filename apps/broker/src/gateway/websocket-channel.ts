import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { FrameChannel, FrameChannelListener } from './frame-channel.js';
import { TurnCork } from './turn-cork.js';

/**
 * An upgraded `ws` socket as a {@link FrameChannel}: one binary message per frame, the frames of a
 * turn written together (`turn-cork.ts`) on `rawSocket`, the connection under it.
 */
export class WebSocketChannel implements FrameChannel {
  readonly #socket: WebSocket;
  readonly #log: FastifyBaseLogger;
  readonly #cork: TurnCork;

  constructor(socket: WebSocket, rawSocket: Socket, log: FastifyBaseLogger) {
    this.#socket = socket;
    this.#log = log;
    this.#cork = new TurnCork(rawSocket);
  }

  get open(): boolean {
    return this.#socket.readyState === this.#socket.OPEN;
  }

  send(frame: Uint8Array): void {
    this.#cork.hold();
    this.#socket.send(frame);
  }

  close(code: number, reason: string): void {
    this.#socket.close(code, reason);
  }

  pauseReading(): void {
    this.#socket.pause();
  }

  resumeReading(): void {
    this.#socket.resume();
  }

  listen(listener: FrameChannelListener): void {
    this.#socket.on('message', (data, isBinary) => {
      if (isBinary) listener.onFrame(toBytes(data));
      else listener.onUnreadable('frames are binary WebSocket messages');
    });
    this.#socket.on('close', () => listener.onClose());
    this.#socket.on('error', (error) => this.#log.debug({ err: error }, 'websocket error'));
  }
}

function toBytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (Array.isArray(data)) return Buffer.concat(data as Buffer[]);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array();
}
