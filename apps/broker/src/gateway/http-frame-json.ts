import { type BrokerFrame, encodeFrame, type Frame, MAX_FRAME_BATCH } from '@ricochet/protocol';

/** A request frame as the HTTP door takes it: encoded for the session, or refused on the way in. */
export type HttpFrameEntry =
  | { readonly frame: Uint8Array; readonly type: string | undefined }
  | { readonly refusal: string; readonly id: number | undefined };

export type HttpFrameBody =
  | { readonly ok: true; readonly entries: readonly HttpFrameEntry[]; readonly isBatch: boolean }
  | { readonly ok: false; readonly message: string };

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Read a JSON body: one frame (an object) or an array of them. JSON has no bytes, so a `send`'s
 * message bodies travel as base64 text and are turned into bytes here; every frame is then
 * encoded as MessagePack, for the session to judge exactly as it judges a WebSocket frame.
 */
export function readJsonFrames(body: Buffer): HttpFrameBody {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (cause) {
    return { ok: false, message: `the body is not JSON: ${(cause as Error).message}` };
  }
  const isBatch = Array.isArray(value);
  const frames: unknown[] = isBatch ? (value as unknown[]) : [value];
  if (frames.length === 0) return { ok: false, message: 'the array of frames is empty' };
  if (frames.length > MAX_FRAME_BATCH) {
    return { ok: false, message: `a batch carries at most ${MAX_FRAME_BATCH} frames, not ${frames.length}` };
  }
  return { ok: true, entries: frames.map(entryOfJson), isBatch };
}

function entryOfJson(value: unknown): HttpFrameEntry {
  const record = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  const id = typeof record.id === 'number' && Number.isInteger(record.id) ? record.id : undefined;
  const type = typeof record.type === 'string' ? record.type : undefined;
  let frame: unknown = value;
  if (type === 'send' && Array.isArray(record.messages)) {
    const messages: unknown[] = [];
    for (const [index, message] of record.messages.entries()) {
      const fields =
        typeof message === 'object' && message !== null ? (message as Record<string, unknown>) : {};
      if (typeof fields.body === 'string') {
        if (!BASE64.test(fields.body)) {
          return { refusal: `invalid frame: messages.${index}.body: base64 text expected in JSON`, id };
        }
        messages.push({ ...fields, body: new Uint8Array(Buffer.from(fields.body, 'base64')) });
      } else messages.push(message);
    }
    frame = { ...record, messages };
  }
  try {
    // Unchecked here on purpose: the session's decoder validates the frame in full.
    return { frame: encodeFrame(frame as Frame), type };
  } catch (cause) {
    // A value MessagePack cannot carry (thousands of nested arrays overflow the encoder).
    return { refusal: `invalid frame: ${(cause as Error).message}`, id };
  }
}

/** Write broker frames as JSON: message bodies as base64 text, the one frame or the array of them. */
export function writeJsonFrames(frames: readonly BrokerFrame[], isBatch: boolean): string {
  return JSON.stringify(isBatch ? frames : frames[0], function bytesAsBase64(this: unknown, key, value) {
    const raw = (this as Record<string, unknown>)[key];
    return raw instanceof Uint8Array
      ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64')
      : value;
  });
}
