import type { Duplex } from 'node:stream';

const FIN_BIT = 0x80;
const OPCODE_MASK = 0x0f;
const MASK_BIT = 0x80;
const LENGTH_MASK = 0x7f;
/** Opcodes 0x0 (continuation), 0x1 (text) and 0x2 (binary) carry message data; 0x8–0xF are control frames. */
const FIRST_CONTROL_OPCODE = 0x8;

/**
 * Follows the frame boundaries of a WebSocket byte stream (RFC 6455 §5.2) without keeping any
 * payload: it reads each frame's header, skips its payload by count, and knows whether the stream
 * stands between messages. `ws` buffers a message's fragments until the last one arrives and says
 * nothing until then; this is how the gateway sees a message that started and never finished.
 */
export class FrameBoundaryTracker {
  /** Header bytes of the frame being read (at most 14). */
  readonly #header: number[] = [];
  #payloadRemaining = 0;
  /** A data frame without FIN was read: the message goes on in continuation frames. */
  #inFragmentedMessage = false;
  /** The frame being read is the last frame of a data message. */
  #currentFrameIsFinalData = false;
  #messagesCompleted = 0;

  /** Whether the stream stands between messages: no frame partly read, no message partly sent. */
  get betweenMessages(): boolean {
    return this.#header.length === 0 && this.#payloadRemaining === 0 && !this.#inFragmentedMessage;
  }

  /** Data messages finished so far (their last frame read whole). */
  get messagesCompleted(): number {
    return this.#messagesCompleted;
  }

  /** Read the next bytes of the stream. */
  push(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.#payloadRemaining > 0) {
        const skipped = Math.min(this.#payloadRemaining, chunk.length - offset);
        this.#payloadRemaining -= skipped;
        offset += skipped;
        if (this.#payloadRemaining === 0) this.#frameEnded();
        continue;
      }
      this.#header.push(chunk[offset] as number);
      offset++;
      const length = headerLength(this.#header);
      if (length !== undefined && this.#header.length === length) this.#headerRead();
    }
  }

  #headerRead(): void {
    const header = this.#header;
    const first = header[0] as number;
    const opcode = first & OPCODE_MASK;
    const isData = opcode < FIRST_CONTROL_OPCODE;
    this.#payloadRemaining = payloadLength(header);
    this.#currentFrameIsFinalData = isData && (first & FIN_BIT) !== 0;
    if (isData) this.#inFragmentedMessage = (first & FIN_BIT) === 0;
    header.length = 0;
    if (this.#payloadRemaining === 0) this.#frameEnded();
  }

  #frameEnded(): void {
    if (this.#currentFrameIsFinalData) this.#messagesCompleted++;
    this.#currentFrameIsFinalData = false;
  }
}

/** The full header length once the first two bytes are known (2 + extended length + mask key). */
function headerLength(header: readonly number[]): number | undefined {
  if (header.length < 2) return undefined;
  const second = header[1] as number;
  const length7 = second & LENGTH_MASK;
  const extended = length7 === 126 ? 2 : length7 === 127 ? 8 : 0;
  return 2 + extended + ((second & MASK_BIT) !== 0 ? 4 : 0);
}

function payloadLength(header: readonly number[]): number {
  const length7 = (header[1] as number) & LENGTH_MASK;
  if (length7 < 126) return length7;
  if (length7 === 126) return ((header[2] as number) << 8) | (header[3] as number);
  // 64-bit length: lengths past 2^53 are not exact, but ws closes such a frame (1009) long before.
  let length = 0;
  for (let i = 2; i < 10; i++) length = length * 256 + (header[i] as number);
  return length;
}

/**
 * Close a connection whose WebSocket message takes longer than `timeoutMs` from its first byte to
 * its last, e.g. a fragmented message whose last fragment never comes (issue 10). Reads the
 * connection's bytes beside `ws`, which keeps its own copy.
 * @returns a function that stops watching.
 */
export function watchMessageDeadline(socket: Duplex, timeoutMs: number, onTimeout: () => void): () => void {
  const tracker = new FrameBoundaryTracker();
  let timer: NodeJS.Timeout | undefined;
  const onData = (chunk: Buffer) => {
    const completedBefore = tracker.messagesCompleted;
    tracker.push(chunk);
    if (tracker.betweenMessages) {
      clearTimeout(timer);
      timer = undefined;
    } else if (timer === undefined || tracker.messagesCompleted !== completedBefore) {
      // A new message began in this chunk: its own deadline starts now.
      clearTimeout(timer);
      timer = setTimeout(onTimeout, timeoutMs);
      timer.unref();
    }
  };
  const stop = () => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', stop);
  };
  socket.on('data', onData);
  socket.once('close', stop);
  return stop;
}
