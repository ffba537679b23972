/**
 * gRPC's framing over HTTP/2 (the "Length-Prefixed-Message" of grpc/doc/PROTOCOL-HTTP2.md): each
 * message is a compressed flag (one byte), its length (four bytes, big-endian) and its bytes. A
 * message may arrive split over DATA frames, and one DATA frame may carry several messages.
 */

/** The flag byte and the length before every message. */
export const MESSAGE_PREFIX_BYTES = 5;

/** Why a stream's bytes are not messages the server reads: answered with the status named. */
export class GrpcFramingError extends Error {
  constructor(
    readonly grpcStatus: number,
    message: string,
  ) {
    super(message);
    this.name = 'GrpcFramingError';
  }
}

/** gRPC's status codes the transport itself answers with (grpc/doc/statuscodes.md). */
export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** One message read off a stream: its bytes, and whether the sender compressed them. */
export interface FramedMessage {
  readonly compressed: boolean;
  readonly bytes: Buffer;
}

/**
 * Cuts a stream's DATA chunks into messages. A message longer than `maxMessageBytes` is refused
 * as soon as its prefix is read (RESOURCE_EXHAUSTED, as grpc-js answers), before its bytes are
 * buffered: a client cannot make the broker hold more than that for one call.
 */
export class MessageReader {
  readonly #maxMessageBytes: number;
  /** Bytes of an unfinished prefix or message, kept until the rest arrives. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(maxMessageBytes: number) {
    this.#maxMessageBytes = maxMessageBytes;
  }

  /**
   * The messages `chunk` completes, in order.
   * @throws GrpcFramingError when a message announces more than the limit.
   */
  push(chunk: Buffer): FramedMessage[] {
    let buffer = chunk;
    if (this.#pendingBytes > 0) {
      this.#pending.push(chunk);
      buffer = Buffer.concat(this.#pending, this.#pendingBytes + chunk.length);
      this.#pending = [];
      this.#pendingBytes = 0;
    }
    const messages: FramedMessage[] = [];
    let at = 0;
    while (buffer.length - at >= MESSAGE_PREFIX_BYTES) {
      const length = buffer.readUInt32BE(at + 1);
      if (length > this.#maxMessageBytes) {
        throw new GrpcFramingError(
          GRPC_STATUS.RESOURCE_EXHAUSTED,
          `Received message larger than max (${length} vs. ${this.#maxMessageBytes})`,
        );
      }
      const end = at + MESSAGE_PREFIX_BYTES + length;
      if (end > buffer.length) break;
      messages.push({ compressed: buffer[at] !== 0, bytes: buffer.subarray(at + MESSAGE_PREFIX_BYTES, end) });
      at = end;
    }
    if (at < buffer.length) {
      const rest = buffer.subarray(at);
      this.#pending.push(rest);
      this.#pendingBytes = rest.length;
    }
    return messages;
  }

  /** The bytes of an unfinished message held until the rest arrives. */
  get bufferedBytes(): number {
    return this.#pendingBytes;
  }

  /** Whether a message was begun and not finished: at the stream's end, the request was cut. */
  get midMessage(): boolean {
    return this.#pendingBytes > 0;
  }
}

/** `message` with its prefix, uncompressed: one buffer, written to the stream as one DATA write. */
export function frameMessage(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(MESSAGE_PREFIX_BYTES + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, MESSAGE_PREFIX_BYTES);
  return frame;
}

/** Milliseconds per unit of `grpc-timeout` (Hours, Minutes, Seconds, milli, micro, nano). */
const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/**
 * A call's deadline from its `grpc-timeout` header (up to 8 digits and a unit), as epoch ms from
 * `now`; `Infinity` without one. A header the spec does not allow reads as no deadline, as
 * grpc-js reads it. Read by hand, not by a regular expression: every call carries one.
 */
export function deadlineOf(timeout: string | undefined, now: number): number {
  if (timeout === undefined || timeout.length < 2 || timeout.length > 9) return Number.POSITIVE_INFINITY;
  const unit = TIMEOUT_UNIT_MS[timeout[timeout.length - 1] as string];
  if (unit === undefined) return Number.POSITIVE_INFINITY;
  let amount = 0;
  for (let at = 0; at < timeout.length - 1; at++) {
    const digit = timeout.charCodeAt(at) - 48;
    if (digit < 0 || digit > 9) return Number.POSITIVE_INFINITY;
    amount = amount * 10 + digit;
  }
  return now + amount * unit;
}
