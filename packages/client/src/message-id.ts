const RANDOM_BYTES = 10;
/** 48 bits of milliseconds: 12 hex digits. */
const TIMESTAMP_DIGITS = 12;

/**
 * Random bytes are drawn 4 KiB at a time and turned into hex digits at once: one
 * `getRandomValues` call and 20 string concatenations per id cost more than the rest of a send,
 * and a producer sending 100k messages a second makes that visible. Each id then takes a slice of
 * the hex pool, and every byte is handed out once: the offset only moves forward until the pool
 * is refilled.
 */
const RANDOM_POOL_BYTES = 4_096;
const randomPool = new Uint8Array(RANDOM_POOL_BYTES);
/** The pool's hex digits as ASCII bytes, decoded into one string per refill. */
const randomPoolDigits = new Uint8Array(RANDOM_POOL_BYTES * 2);
const HEX_DIGIT_CODES = Array.from('0123456789abcdef', (digit) => digit.charCodeAt(0));
const ascii = new TextDecoder('latin1');
let randomHex = '';
let randomPoolOffset = RANDOM_POOL_BYTES;

/** The hex of the last timestamp asked for: ids made in the same millisecond share it. */
let prefixMs = Number.NaN;
let prefixHex = '';

function timestampHex(nowMs: number): string {
  if (nowMs !== prefixMs) {
    // Big-endian 48 bits are the number's hex, zero-padded to 12 digits.
    prefixHex = Math.trunc(nowMs).toString(16).padStart(TIMESTAMP_DIGITS, '0').slice(-TIMESTAMP_DIGITS);
    prefixMs = nowMs;
  }
  return prefixHex;
}

function randomHexDigits(): string {
  if (randomPoolOffset + RANDOM_BYTES > RANDOM_POOL_BYTES) {
    globalThis.crypto.getRandomValues(randomPool);
    for (let index = 0; index < RANDOM_POOL_BYTES; index++) {
      const byte = randomPool[index] as number;
      randomPoolDigits[index * 2] = HEX_DIGIT_CODES[byte >>> 4] as number;
      randomPoolDigits[index * 2 + 1] = HEX_DIGIT_CODES[byte & 0x0f] as number;
    }
    randomHex = ascii.decode(randomPoolDigits);
    randomPoolOffset = 0;
  }
  const from = randomPoolOffset * 2;
  randomPoolOffset += RANDOM_BYTES;
  return randomHex.slice(from, from + RANDOM_BYTES * 2);
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
  return timestampHex(nowMs) + randomHexDigits();
}
