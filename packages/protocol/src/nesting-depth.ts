/**
 * How deep a frame may nest maps and arrays. The deepest frame of the protocol nests four levels
 * (a `send`'s messages, a message, its properties); 32 leaves room for any future frame.
 */
export const MAX_FRAME_NESTING = 32;

/**
 * Whether MessagePack `bytes` nest maps and arrays deeper than `maxDepth`, found by walking the
 * value headers without decoding anything. A decoder recurses once per level: thousands of nested
 * one-element arrays (one byte each) overflow its stack, and a stack overflow costs milliseconds,
 * so a frame of such garbage would cost the broker far more than it cost to send. This walk is
 * iterative and skips strings and binaries by their length. Malformed or truncated input is left
 * to the decoder to report: the walk answers false for it.
 */
export function nestsDeeperThan(bytes: Uint8Array, maxDepth: number): boolean {
  /** Values still to read in each open container, the outermost first. */
  const remaining: number[] = [1];
  let position = 0;
  while (remaining.length > 0) {
    const last = remaining.length - 1;
    if (remaining[last] === 0) {
      remaining.pop();
      continue;
    }
    remaining[last] = (remaining[last] as number) - 1;
    if (position >= bytes.length) return false;
    const header = bytes[position] as number;
    const children = containerSize(bytes, position, header);
    if (children !== undefined) {
      position += containerHeaderLength(header);
      if (children > 0) {
        if (remaining.length > maxDepth) return true;
        remaining.push(children);
      }
      continue;
    }
    const length = scalarLength(bytes, position, header);
    if (length === undefined) return false;
    position += length;
  }
  return false;
}

/** The number of values inside a map (keys and values) or array at `position`; undefined for a scalar. */
export function containerSize(bytes: Uint8Array, position: number, header: number): number | undefined {
  if (header >= 0x80 && header <= 0x8f) return (header & 0x0f) * 2;
  if (header >= 0x90 && header <= 0x9f) return header & 0x0f;
  if (header === 0xdc) return readUint(bytes, position + 1, 2);
  if (header === 0xdd) return readUint(bytes, position + 1, 4);
  if (header === 0xde) return readUint(bytes, position + 1, 2) * 2;
  if (header === 0xdf) return readUint(bytes, position + 1, 4) * 2;
  return undefined;
}

export function containerHeaderLength(header: number): number {
  if (header === 0xdc || header === 0xde) return 3;
  if (header === 0xdd || header === 0xdf) return 5;
  return 1;
}

/** The whole length of the scalar at `position`, header included; undefined for the unused 0xc1. */
export function scalarLength(bytes: Uint8Array, position: number, header: number): number | undefined {
  if (header <= 0x7f || header >= 0xe0) return 1; // positive and negative fixint
  if (header >= 0xa0 && header <= 0xbf) return 1 + (header & 0x1f); // fixstr
  switch (header) {
    case 0xc0:
    case 0xc2:
    case 0xc3:
      return 1;
    case 0xc4:
    case 0xd9:
      return 2 + readUint(bytes, position + 1, 1); // bin 8, str 8
    case 0xc5:
    case 0xda:
      return 3 + readUint(bytes, position + 1, 2);
    case 0xc6:
    case 0xdb:
      return 5 + readUint(bytes, position + 1, 4);
    case 0xc7:
      return 3 + readUint(bytes, position + 1, 1); // ext 8: length, type, data
    case 0xc8:
      return 4 + readUint(bytes, position + 1, 2);
    case 0xc9:
      return 6 + readUint(bytes, position + 1, 4);
    case 0xca:
      return 5;
    case 0xcb:
      return 9;
    case 0xcc:
    case 0xd0:
      return 2;
    case 0xcd:
    case 0xd1:
      return 3;
    case 0xce:
    case 0xd2:
      return 5;
    case 0xcf:
    case 0xd3:
      return 9;
    case 0xd4:
      return 3; // fixext 1: type and 1 byte
    case 0xd5:
      return 4;
    case 0xd6:
      return 6;
    case 0xd7:
      return 10;
    case 0xd8:
      return 18;
    default:
      return undefined; // 0xc1, never used
  }
}

/** A big-endian unsigned integer of `size` bytes; 0 past the end (the walk then stops there). */
function readUint(bytes: Uint8Array, position: number, size: number): number {
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + (bytes[position + i] ?? 0);
  return value;
}
