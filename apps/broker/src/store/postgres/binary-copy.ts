/**
 * A parser of PostgreSQL's binary COPY format (`COPY … TO STDOUT (FORMAT binary)`, see the
 * PostgreSQL manual, "COPY", "Binary Format"), for loading the store into the local copy: the
 * rows arrive as raw bytes, with no hex text for `bytea` and no row object built by the driver,
 * which made up about a quarter of the broker's CPU while loading.
 */

/** The 11-byte signature that opens every binary COPY stream. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** The SQL types the parser decodes: `text` to a string, `bigint` to a number, `bytea` to bytes. */
export type CopyFieldType = 'text' | 'bigint' | 'bytea';

/**
 * One row, a value per field, `null` for SQL NULL. `bytea` values are views of the stream's
 * chunks; `bigint` values must be safe integers (offsets and timestamps are).
 */
export type CopyRow = (string | number | Buffer | null)[];

/**
 * Reads the rows of a binary COPY stream from its chunks, cut anywhere, synchronously, so a
 * stream's `data` handler can take them as they come.
 */
export class BinaryCopyParser {
  readonly #types: readonly CopyFieldType[];
  #pending: Buffer = Buffer.alloc(0);
  #headerRead = false;
  #ended = false;

  /** @param types - the type of each field of a row, in order */
  constructor(types: readonly CopyFieldType[]) {
    this.#types = types;
  }

  /**
   * The rows complete once `chunk` is added, in order.
   * @throws Error when the stream is not a binary COPY stream, or has data after its trailer.
   */
  push(chunk: Uint8Array): CopyRow[] {
    if (this.#ended) throw new Error('binary COPY stream: data after its trailer');
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const pending = this.#pending.length === 0 ? bytes : Buffer.concat([this.#pending, bytes]);
    let at = 0;
    if (!this.#headerRead) {
      const headerEnd = headerLength(pending);
      if (headerEnd === undefined) {
        this.#pending = pending;
        return [];
      }
      at = headerEnd;
      this.#headerRead = true;
    }
    const rows: CopyRow[] = [];
    // Bounded by the chunk: each pass consumes one whole row, or stops.
    while (pending.length - at >= 2) {
      const fields = pending.readInt16BE(at);
      if (fields === -1) {
        this.#ended = true;
        at += 2;
        break;
      }
      if (fields !== this.#types.length) {
        throw new Error(`binary COPY stream: a row of ${fields} fields, not ${this.#types.length}`);
      }
      const row = readRow(pending, at + 2, this.#types);
      if (row === undefined) break;
      rows.push(row.fields);
      at = row.end;
    }
    this.#pending = pending.subarray(at);
    if (this.#ended && this.#pending.length > 0)
      throw new Error('binary COPY stream: data after its trailer');
    return rows;
  }

  /**
   * The stream ended.
   * @throws Error when it ended inside a row or before its trailer.
   */
  end(): void {
    if (!this.#ended || this.#pending.length > 0)
      throw new Error('binary COPY stream: ended before its trailer');
  }
}

/** Where the header ends, or `undefined` while it has not all arrived. */
function headerLength(buffer: Buffer): number | undefined {
  if (buffer.length < SIGNATURE.length + 8) return undefined;
  if (!buffer.subarray(0, SIGNATURE.length).equals(SIGNATURE)) {
    throw new Error('binary COPY stream: no PGCOPY signature');
  }
  const extension = buffer.readInt32BE(SIGNATURE.length + 4);
  const end = SIGNATURE.length + 8 + extension;
  return buffer.length < end ? undefined : end;
}

/** The row whose fields start at `at`, or `undefined` while it has not all arrived. */
function readRow(
  buffer: Buffer,
  at: number,
  types: readonly CopyFieldType[],
): { fields: CopyRow; end: number } | undefined {
  const fields: CopyRow = new Array(types.length);
  let position = at;
  for (let i = 0; i < types.length; i++) {
    if (buffer.length - position < 4) return undefined;
    const length = buffer.readInt32BE(position);
    position += 4;
    if (length === -1) {
      fields[i] = null;
      continue;
    }
    const end = position + length;
    if (buffer.length < end) return undefined;
    const type = types[i];
    // Decoded straight from the chunk: no view per field, no BigInt.
    if (type === 'text') fields[i] = buffer.toString('utf8', position, end);
    else if (type === 'bigint')
      fields[i] = buffer.readInt32BE(position) * 2 ** 32 + buffer.readUInt32BE(position + 4);
    else fields[i] = buffer.subarray(position, end);
    position = end;
  }
  return { fields, end: position };
}
