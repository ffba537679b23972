/** A broker's default cap on a message body: 4 MiB (configurable per broker). */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The cap on a message's properties, counted as the UTF-8 bytes of every key and value: 16 KiB. */
export const MAX_PROPERTIES_BYTES = 16 * 1024;

/** A message group (the FIFO key) must be shorter than this many UTF-8 bytes. */
export const MAX_MESSAGE_GROUP_BYTES = 64;

/** The most messages one `receive` may ask for. */
export const MAX_RECEIVE_MESSAGES = 32;

/** The most messages one `send` frame may carry. */
export const MAX_SEND_BATCH_MESSAGES = 1_024;

/**
 * The most queues a broker's store may be split into (`--store-queues`): a session between brokers
 * names one of them in `hello.queue`.
 */
export const MAX_STORE_QUEUES = 64;

/** The longest a `receive` may wait for a message to arrive (long polling): 30 s. */
export const MAX_AWAIT_DURATION_MS = 30_000;

/** The farthest ahead a delay message may be scheduled by default: 24 h (T1). */
export const DEFAULT_MAX_DELAY_MS = 24 * 60 * 60 * 1_000;

/**
 * The UTF-8 length of a string without allocating an encoder, so that the protocol package stays
 * free of platform globals. Lone surrogates count as the 3 bytes of U+FFFD, as TextEncoder does.
 */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** The size of a properties map as {@link MAX_PROPERTIES_BYTES} counts it. */
export function propertiesByteLength(properties: Readonly<Record<string, string>>): number {
  let bytes = 0;
  for (const [key, value] of Object.entries(properties)) bytes += utf8ByteLength(key) + utf8ByteLength(value);
  return bytes;
}
