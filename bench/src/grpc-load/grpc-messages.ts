/**
 * gRPC's message framing (the "Length-Prefixed-Message" of grpc/doc/PROTOCOL-HTTP2.md), as the
 * load generator writes requests and reads answers: uncompressed only.
 */

/** gRPC's message prefix: a compressed flag (always 0 here) and a 4-byte big-endian length. */
export const FRAME_HEADER_BYTES = 5;

/** A message in gRPC's length-prefixed framing, ready to be a request's whole body. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, FRAME_HEADER_BYTES);
  return frame;
}

/** The messages of a gRPC body, unframed. @throws Error on a compressed or cut message. */
export function grpcMessagesOf(body: Buffer): Buffer[] {
  const messages: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    if (body[at] !== 0) throw new Error('a compressed gRPC message (none was asked for)');
    const end = at + FRAME_HEADER_BYTES + body.readUInt32BE(at + 1);
    if (end > body.length) throw new Error('a gRPC message cut short');
    messages.push(body.subarray(at + FRAME_HEADER_BYTES, end));
    at = end;
  }
  return messages;
}
