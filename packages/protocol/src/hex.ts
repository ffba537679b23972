/** Lowercase hex of bytes; for fixtures, logs and the spec's examples. */
export function toHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/**
 * Bytes from hex, ignoring white space so that long examples can be wrapped.
 * @throws RangeError on an odd length or a character that is not a hex digit.
 */
export function fromHex(hex: string): Uint8Array {
  const digits = hex.replace(/\s+/g, '');
  if (digits.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(digits)) throw new RangeError('not a hex string');
  const bytes = new Uint8Array(digits.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(digits.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}
