import { unpack } from 'msgpackr';
import type { StoredMessage } from '../records.js';
import { decodeStoredMessage, isStoredMessageRecord } from '../schema/stored-message.js';

/**
 * The message a value of `ricochet_messages` holds, as a row, a standby's feed or a load gives it.
 * Since the database's layout 3 a row holds the embedded store's layout 2 record
 * (`schema/stored-message.ts`), which the local copy stores as it is and a delivery copies from;
 * rows written before hold the message as a plain MessagePack map, read beside them.
 */
export function messageOfRow(value: Uint8Array): StoredMessage {
  return isStoredMessageRecord(value) ? decodeStoredMessage(value) : (unpack(value) as StoredMessage);
}
