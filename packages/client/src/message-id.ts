const TIMESTAMP_BYTES = 6;
const RANDOM_BYTES = 10;
const HEX_BY_BYTE = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * Random bytes are drawn 4 KiB at a time: one `getRandomValues` call per id costs more than the
 * rest of the id, and a producer sending 100k messages a second makes that visible.
 */
const RANDOM_POOL_BYTES = 4_096;
const randomPool = new Uint8Array(RANDOM_POOL_BYTES);
let randomPoolOffset = RANDOM_POOL_BYTES;

function takeRandomBytes(target: Uint8Array): void {
  if (randomPoolOffset + target.length > RANDOM_POOL_BYTES) {
    globalThis.crypto.getRandomValues(randomPool);
    randomPoolOffset = 0;
  }
  // Every byte is handed out once: the offset only moves forward until the pool is refilled.
  target.set(randomPool.subarray(randomPoolOffset, randomPoolOffset + target.length));
  randomPoolOffset += target.length;
}

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
  takeRandomBytes(bytes.subarray(TIMESTAMP_BYTES));
  let id = '';
  for (const byte of bytes) id += HEX_BY_BYTE[byte];
  return id;
}
