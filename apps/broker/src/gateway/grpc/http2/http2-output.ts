import type { Duplex } from 'node:stream';
import { FRAME_PREFIX_BYTES, FRAME_TYPE, writeFramePrefix } from './http2-frames.js';

const EMPTY = Buffer.alloc(0);
/** The buffer a turn's frames are written into, grown when a turn writes more. */
const OUT_BUFFER_BYTES = 16 * 1_024;
/** Answers a client may leave unread before its connection is cut, as node:http2's session memory bound did. */
const MAX_UNREAD_ANSWER_BYTES = 256 * 1_048_576;

/**
 * What a connection writes: the frames of one turn of the event loop, one after another in one
 * buffer (a frame's prefix and its payload copied in, no object per frame), handed to the socket
 * in one write once the turn's callbacks and promise continuations are done. Streams that wrote
 * answer bytes in the turn are asked for them first ({@link flushSoon}), so a turn's writes of one
 * stream share DATA frames.
 *
 * It also keeps a client that leaves its answers unread from making the broker hold more: the
 * socket is not read until it drains (the client's next requests wait in its own socket), and past
 * 256 MiB left unread the connection is cut.
 */
export class Http2Output {
  readonly #socket: Duplex;
  /** Made at a turn's first frame, so an idle connection holds none. */
  #out = EMPTY;
  #outBytes = 0;
  #flushScheduled = false;
  #ended = false;
  #readingPaused = false;
  /** Streams that wrote in this turn: asked for their bytes before the turn's write. */
  readonly #streamsToFlush = new Set<{ flush(): void }>();

  constructor(socket: Duplex) {
    this.#socket = socket;
  }

  /** Whether the socket is left unread until the client reads its answers. */
  get readingPaused(): boolean {
    return this.#readingPaused;
  }

  /** Queue one frame for the turn's write. */
  frame(type: number, flags: number, streamId: number, payload: Uint8Array): void {
    if (this.#ended) return;
    this.#room(FRAME_PREFIX_BYTES + payload.length);
    writeFramePrefix(this.#out, this.#outBytes, payload.length, type, flags, streamId);
    this.#out.set(payload, this.#outBytes + FRAME_PREFIX_BYTES);
    this.#outBytes += FRAME_PREFIX_BYTES + payload.length;
    this.#scheduleFlush();
  }

  /** Queue one DATA frame whose payload is `parts`, `length` bytes in all. */
  data(streamId: number, parts: readonly Buffer[], length: number): void {
    if (this.#ended) return;
    this.#room(FRAME_PREFIX_BYTES + length);
    writeFramePrefix(this.#out, this.#outBytes, length, FRAME_TYPE.DATA, 0, streamId);
    let at = this.#outBytes + FRAME_PREFIX_BYTES;
    for (const part of parts) {
      this.#out.set(part, at);
      at += part.length;
    }
    this.#outBytes = at;
    this.#scheduleFlush();
  }

  /** Ask `stream` for its bytes (its `flush`) before the turn's write. */
  flushSoon(stream: { flush(): void }): void {
    this.#streamsToFlush.add(stream);
    this.#scheduleFlush();
  }

  /** A stream closed: it has nothing more to write. */
  forget(stream: { flush(): void }): void {
    this.#streamsToFlush.delete(stream);
  }

  /** Write what is queued now, and nothing after. */
  end(): void {
    this.flush();
    this.#ended = true;
    this.#streamsToFlush.clear();
  }

  /** Write what the turn queued: the streams' bytes, then every frame, in one socket write. */
  flush(): void {
    this.#flushScheduled = false;
    if (this.#streamsToFlush.size > 0) {
      const streams = [...this.#streamsToFlush];
      this.#streamsToFlush.clear();
      for (const stream of streams) stream.flush();
    }
    if (this.#outBytes === 0) return;
    const written = this.#out.subarray(0, this.#outBytes);
    // The socket keeps the bytes until they are sent: the next frames go into a new buffer.
    this.#out = EMPTY;
    this.#outBytes = 0;
    const socket = this.#socket;
    if (socket.destroyed) return;
    if (!socket.write(written) && !this.#readingPaused && !this.#ended) {
      // A client that does not read its answers sends no more requests until it has: what the
      // broker holds for it stays what it already asked for.
      this.#readingPaused = true;
      socket.pause();
      socket.once('drain', () => {
        this.#readingPaused = false;
        socket.resume();
      });
    }
    if (socket.writableLength > MAX_UNREAD_ANSWER_BYTES) {
      // Not even those: answers it asked for and left unread past the bound end the connection.
      socket.destroy();
    }
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // After this turn's callbacks and promise continuations: their frames leave in one write.
    process.nextTick(() => this.flush());
  }

  /** Room in the turn's buffer for `bytes` more, grown when it has none. */
  #room(bytes: number): void {
    if (this.#outBytes + bytes <= this.#out.length) return;
    const grown = Buffer.allocUnsafe(
      Math.max(OUT_BUFFER_BYTES, this.#out.length * 2, this.#outBytes + bytes),
    );
    this.#out.copy(grown, 0, 0, this.#outBytes);
    this.#out = grown;
  }
}
