import { Packr, type UnpackOptions } from 'msgpackr';
import type { StoredMessage } from './records.js';
import { uint16At, uint32At } from './schema/record-bytes.js';
import { decodeStoredMessage } from './schema/stored-message.js';

/**
 * A value of the LMDB store's `messages` database: a layout 2 value (`schema/stored-message.ts`),
 * or, in a directory that began in layout 1, a message as layout 1 stored it. Layout 2 changed the
 * messages' records alone and reads layout 1's beside its own, so opening a layout 1 directory
 * rewrites nothing but its version; its messages are read as they are until retention removes them.
 */
export type MessageRecord = Uint8Array | StoredMessage;

/** The message a value of the `messages` database holds, under the key `[topic, …]`. */
export function messageOf(value: MessageRecord, topic: string): StoredMessage {
  return value instanceof Uint8Array ? decodeStoredMessage(value, topic) : value;
}

/**
 * The encoder of the `messages` database: msgpackr with the database's shared structures, as for
 * every structured database (lmdb-js makes it, through its `encoder.Encoder` option), but a layout 2
 * stored value (a MessagePack `bin`) is read by hand.
 *
 * lmdb-js hands a decoder the bytes of a value in its own read buffer, reused for the next read, so
 * whatever is kept must be copied. msgpackr copies a `bin` into memory of its own
 * (`Uint8Array.prototype.slice`), a new `ArrayBuffer` each time: about 0.6 µs per message read,
 * measured, whatever its size. This copies a value into Node's pooled memory instead
 * (`Buffer.allocUnsafe`, which slices values under 4 KiB out of shared 8 KiB blocks, as any small
 * Buffer in Node is): about a quarter of that. Like any pooled Buffer, a value kept alive keeps
 * its block alive, at most 8 KiB.
 *
 * The whole value is kept, its `bin` header included: it is the stored value a PostgreSQL row holds
 * too, and the store writes it back as it is. Writing, a value is handed to lmdb-js as it is
 * (`asBinary`), without this encoder.
 *
 * Layout 1 records (maps and structures) are left to msgpackr, as before.
 */
export class MessageRecordEncoder extends Packr {
  override decode(bytes: Uint8Array, options?: UnpackOptions): unknown {
    const header = bytes[0];
    let start: number;
    let length: number;
    if (header === 0xc4) {
      start = 2;
      length = bytes[1] as number;
    } else if (header === 0xc5) {
      start = 3;
      length = uint16At(bytes, 1);
    } else if (header === 0xc6) {
      start = 5;
      // The form every stored value is written in: read without a DataView per message.
      length = uint32At(bytes, 1);
    } else {
      return super.decode(bytes, options);
    }
    const value = Buffer.allocUnsafe(start + length);
    value.set(new Uint8Array(bytes.buffer, bytes.byteOffset, start + length));
    return value;
  }
}
