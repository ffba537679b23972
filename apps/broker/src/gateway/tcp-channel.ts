import type { Socket } from 'node:net';
import {
  type BrokerFrame,
  ERROR_CODES,
  encodeFrame,
  encodeStreamClose,
  StreamFrameReader,
  type StreamRecord,
  streamFramePrefix,
} from '@ricochet/protocol';
import type { FastifyBaseLogger } from 'fastify';
import { CLOSE_CODES } from './close-codes.js';
import type { ConnectionLimits } from './connection-limits.js';
import type { FrameChannel, FrameChannelListener } from './frame-channel.js';
import { TurnCork } from './turn-cork.js';

/** A peer that does not end its side after the close record is cut this long after it. */
const DESTROY_AFTER_CLOSE_MS = 1_000;

/** What a {@link TcpChannel} needs besides its socket. */
export interface TcpChannelOptions {
  readonly maxFrameBytes: number;
  /** How long one frame may take from its first byte to its last (`websocketMessageTimeoutMs`). */
  readonly frameTimeoutMs: number;
  readonly limits: ConnectionLimits;
  readonly log: FastifyBaseLogger;
}

/**
 * A TCP (or TLS) socket as a {@link FrameChannel}: length-prefixed frames, and the close record in
 * place of a WebSocket close frame (docs/protocol/transports.md). What the WebSocket library does
 * for the WebSocket endpoint happens here: a length over `maxFrameBytes` is answered with `413`
 * and the close code `1009` before any of the frame is buffered; a broken close record with `400`
 * and `1002`; a frame that does not finish within its deadline closes with `1008`.
 */
export class TcpChannel implements FrameChannel {
  readonly #socket: Socket;
  readonly #cork: TurnCork;
  readonly #options: TcpChannelOptions;
  readonly #reader: StreamFrameReader;
  #frameDeadline: NodeJS.Timeout | undefined;
  #closing = false;

  constructor(socket: Socket, options: TcpChannelOptions) {
    this.#socket = socket;
    this.#cork = new TurnCork(socket);
    this.#options = options;
    this.#reader = new StreamFrameReader(options.maxFrameBytes);
  }

  get open(): boolean {
    return !this.#closing && this.#socket.writable;
  }

  send(frame: Uint8Array): void {
    if (!this.open) return;
    // The prefix and the frame, and the turn's other frames, in one syscall, without copying the
    // frame behind its prefix.
    this.#cork.hold();
    this.#socket.write(streamFramePrefix(frame.length));
    this.#socket.write(frame);
  }

  close(code: number, reason: string): void {
    if (this.#closing) return;
    this.#closing = true;
    this.#clearFrameDeadline();
    const socket = this.#socket;
    if (socket.destroyed) return;
    socket.end(encodeStreamClose(code, reason));
    const timer = setTimeout(() => socket.destroy(), DESTROY_AFTER_CLOSE_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  }

  pauseReading(): void {
    this.#socket.pause();
  }

  resumeReading(): void {
    if (!this.#closing) this.#socket.resume();
  }

  listen(listener: FrameChannelListener): void {
    const socket = this.#socket;
    socket.on('data', (chunk: Buffer) => {
      if (this.#closing) return;
      for (const record of this.#reader.push(chunk)) this.#take(record, listener);
      this.#watchFrameDeadline();
    });
    socket.on('end', () => {
      // The client ended its side (after its close record, or without one): end ours.
      this.close(CLOSE_CODES.normalClosure, '');
    });
    socket.on('close', () => {
      this.#closing = true;
      this.#clearFrameDeadline();
      listener.onClose();
    });
    socket.on('error', (error) => this.#options.log.debug({ err: error }, 'tcp connection error'));
  }

  #take(record: StreamRecord, listener: FrameChannelListener): void {
    switch (record.type) {
      case 'frame':
        listener.onFrame(record.bytes);
        return;
      case 'close':
        this.close(CLOSE_CODES.normalClosure, '');
        return;
      case 'oversize': {
        const { maxFrameBytes, limits, log } = this.#options;
        limits.rejected('maxFrameBytes');
        const message = `a frame of ${record.length} bytes is over maxFrameBytes (${maxFrameBytes})`;
        log.warn({ reason: message }, 'client sent an oversized frame; connection closed');
        this.#failWith(ERROR_CODES.MESSAGE_TOO_LARGE.code, message, CLOSE_CODES.messageTooBig, {
          limit: 'maxFrameBytes',
          max: maxFrameBytes,
        });
        return;
      }
      case 'invalid':
        this.#options.log.warn(
          { reason: record.message },
          'client broke the stream framing; connection closed',
        );
        this.#failWith(ERROR_CODES.BAD_REQUEST.code, record.message, CLOSE_CODES.protocolError);
        return;
    }
  }

  /** The catalogue's error frame, then the close record: the stream cannot be read any further. */
  #failWith(
    code: number,
    message: string,
    closeCode: number,
    details?: Record<string, string | number>,
  ): void {
    const frame: BrokerFrame = {
      type: 'error',
      code,
      message,
      ...(details === undefined ? {} : { details }),
    };
    this.send(encodeFrame(frame));
    this.close(closeCode, message.slice(0, 120));
  }

  /** A frame begun must end within `frameTimeoutMs`, else the connection closes (slow-loris guard). */
  #watchFrameDeadline(): void {
    if (!this.#reader.midRecord || this.#closing) {
      this.#clearFrameDeadline();
      return;
    }
    if (this.#frameDeadline !== undefined) return;
    const { frameTimeoutMs, limits, log } = this.#options;
    this.#frameDeadline = setTimeout(() => {
      this.#frameDeadline = undefined;
      limits.rejected('websocketMessageTimeoutMs');
      log.warn({ timeoutMs: frameTimeoutMs }, 'client did not finish a frame in time; closing');
      this.close(CLOSE_CODES.policyViolation, `frame not finished within ${frameTimeoutMs} ms`);
    }, frameTimeoutMs);
    this.#frameDeadline.unref();
  }

  #clearFrameDeadline(): void {
    clearTimeout(this.#frameDeadline);
    this.#frameDeadline = undefined;
  }
}
