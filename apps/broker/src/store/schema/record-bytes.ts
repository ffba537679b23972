/**
 * Numbers and views in the bytes of a stored record, read and written in place: big-endian, as
 * MessagePack and the record's header keep them, and without an allocation per message (no
 * `DataView` over each record).
 */

/**
 * A plain view of part of the bytes. `subarray` of a Buffer (what the store reads) makes another
 * Buffer, whose construction costs several times a plain view's: measurable for every delivery.
 */
export function viewOf(bytes: Uint8Array, start: number, length: number): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset + start, length);
}

/** Eight bytes a float 64 is read from or written to, big-endian: one buffer for all, none allocated per message. */
const scratch = new DataView(new ArrayBuffer(8));

export function float64At(bytes: Uint8Array, at: number): number {
  for (let index = 0; index < 8; index++) scratch.setUint8(index, bytes[at + index] as number);
  return scratch.getFloat64(0);
}

export function setFloat64At(bytes: Uint8Array, at: number, value: number): void {
  scratch.setFloat64(0, value);
  for (let index = 0; index < 8; index++) bytes[at + index] = scratch.getUint8(index);
}

export function setUint32At(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value >>> 24;
  bytes[at + 1] = (value >>> 16) & 0xff;
  bytes[at + 2] = (value >>> 8) & 0xff;
  bytes[at + 3] = value & 0xff;
}

export function uint32At(bytes: Uint8Array, at: number): number {
  return (
    (bytes[at] as number) * 0x100_0000 +
    (((bytes[at + 1] as number) << 16) | ((bytes[at + 2] as number) << 8) | (bytes[at + 3] as number))
  );
}

export function uint16At(bytes: Uint8Array, at: number): number {
  return ((bytes[at] as number) << 8) | (bytes[at + 1] as number);
}
