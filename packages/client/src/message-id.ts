const TIMESTAMP_BYTES = 6;
const RANDOM_BYTES = 10;
const HEX_BY_BYTE = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * A new message id: 32 lowercase hex digits for 16 bytes, a 48-bit big-endian millisecond
 * timestamp followed by 80 random bits (UUIDv7's layout without its version bits). Ids sort by
 * creation time to the millisecond, which keeps the broker's dedup index append-mostly, and 80
 * random bits make a collision within one millisecond negligible.
 *
 * @param nowMs - the creation time in epoch milliseconds. @default Date.now()
 * @see DESIGN.md §2 (message model) and `MESSAGE_ID_PATTERN`
 */
export function createMessageId(nowMs: number = Date.now()): string {
  const bytes = new Uint8Array(TIMESTAMP_BYTES + RANDOM_BYTES);
  // Split the timestamp in two: bitwise operators in JavaScript only reach 32 bits.
  const high = Math.floor(nowMs / 2 ** 32);
  const low = nowMs >>> 0;
  bytes[0] = (high >>> 8) & 0xff;
  bytes[1] = high & 0xff;
  bytes[2] = (low >>> 24) & 0xff;
  bytes[3] = (low >>> 16) & 0xff;
  bytes[4] = (low >>> 8) & 0xff;
  bytes[5] = low & 0xff;
  globalThis.crypto.getRandomValues(bytes.subarray(TIMESTAMP_BYTES));
  let id = '';
  for (const byte of bytes) id += HEX_BY_BYTE[byte];
  return id;
}
