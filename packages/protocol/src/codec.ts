import { type Options, Packr } from 'msgpackr';
import type { z } from 'zod';
import { ERROR_CODES } from './error-catalogue.js';
import { writeFrame } from './frame-writer.js';
import { hotBrokerFrame, hotClientFrame } from './hot-frames.js';
import { MAX_FRAME_NESTING, nestsDeeperThan } from './nesting-depth.js';
import {
  type BrokerFrame,
  brokerFrameSchema,
  type ClientFrame,
  clientFrameSchema,
  type Frame,
  frameSchema,
} from './schemas/frames.js';

/**
 * Standard MessagePack only. msgpackr's defaults add a non-standard "record" extension and
 * others; peers in other languages could not read those, so every extension is off: objects are
 * maps, maps decode to plain objects, `undefined` properties are skipped (absent, not nil), and
 * 64-bit integers decode to numbers (every integer field fits in 2^53).
 */
const packrOptions: Options & { skipValues: readonly unknown[] } = {
  useRecords: false,
  moreTypes: false,
  structuredClone: false,
  bundleStrings: false,
  mapsAsObjects: true,
  variableMapSize: true,
  skipValues: [undefined],
  int64AsType: 'number',
};
// `skipValues` is implemented by msgpackr 1.11+ but missing from its type definitions.
const packr = new Packr(packrOptions);

/** One thing wrong with a decoded frame. */
export interface FrameIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/** Why bytes could not be decoded as a frame. It always maps to `400 BAD_REQUEST`. */
export interface FrameDecodeError {
  readonly code: typeof ERROR_CODES.BAD_REQUEST.code;
  readonly message: string;
  /** The request id, when the bytes were a map with a valid `id`, so the answer can correlate. */
  readonly id?: number;
  /** The frame type, when the bytes named one. */
  readonly frameType?: string;
  readonly issues: readonly FrameIssue[];
}

/** The outcome of decoding: a typed frame, or a typed error. Never a throw. */
export type DecodeResult<TFrame> =
  | { readonly ok: true; readonly frame: TFrame }
  | { readonly ok: false; readonly error: FrameDecodeError };

/**
 * Encode a frame as one standard MessagePack map. The caller is trusted to pass a valid frame
 * (the type system says so); peers validate on decode.
 */
export function encodeFrame(frame: Frame): Uint8Array {
  // The frames that carry messages by hand: the same bytes, about 0.5 µs less CPU a message for a
  // producer's `send` and a broker's `deliver`. (A broker's `sendResult` measured no better by
  // hand, so msgpackr writes it.) Callers may hand it anything (tests of hostile input pack
  // garbage): only a frame has a type.
  const type: unknown = typeof frame === 'object' && frame !== null ? frame.type : undefined;
  if (type === 'send' || type === 'deliver' || type === 'messages') {
    const written = writeFrame(frame);
    if (written !== undefined) return written;
  }
  return packr.pack(frame);
}

/** msgpackr with the codec's options: what {@link writeFrame} must match byte for byte (its test). */
export function packWithMsgpackr(value: unknown): Uint8Array {
  return packr.pack(value);
}

/**
 * Decode MessagePack the codec (or {@link writeFrame}) wrote, with the codec's options and no
 * checks: only for bytes this process or its own store wrote, never for a peer's.
 */
export function unpackTrusted(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/** Decode any frame of the protocol. Returns a {@link FrameDecodeError} for any bad input. */
export function decodeFrame(bytes: Uint8Array): DecodeResult<Frame> {
  return decodeWith(bytes, frameSchema, noHotCheck);
}

/**
 * Decode a frame a client may send; the broker's entry point. The frames that carry the traffic
 * (`send`, `ack`, `credit`) are checked by hand first and reach zod only when the exact checks
 * cannot vouch for them (hot-frames.ts): the result is the same either way.
 */
export function decodeClientFrame(bytes: Uint8Array): DecodeResult<ClientFrame> {
  return decodeWith(bytes, clientFrameSchema, hotClientFrame);
}

/** Decode a frame the broker may send; the clients' entry point (`deliver`, `messages`, `sendResult` and `settled` checked by hand first). */
export function decodeBrokerFrame(bytes: Uint8Array): DecodeResult<BrokerFrame> {
  return decodeWith(bytes, brokerFrameSchema, hotBrokerFrame);
}

const noHotCheck = (): undefined => undefined;

const MAX_REPORTED_ISSUES = 10;

function decodeWith<TFrame>(
  bytes: Uint8Array,
  schema: z.ZodType<TFrame>,
  hotCheck: (value: Record<string, unknown>) => TFrame | undefined,
): DecodeResult<TFrame> {
  let value: unknown;
  try {
    if (!(bytes instanceof Uint8Array) || bytes.byteLength === 0) {
      return failure('a frame is one non-empty MessagePack map', undefined);
    }
    // Refuse anything but a map by its first byte, before unpacking: garbage (thousands of nested
    // arrays, say) then costs one comparison, not a parse.
    if (!isMapHeader(bytes[0] as number)) return failure('a frame is a MessagePack map', undefined);
    if (nestsDeeperThan(bytes, MAX_FRAME_NESTING)) {
      return failure(`a frame nests maps and arrays at most ${MAX_FRAME_NESTING} levels deep`, undefined);
    }
    value = packr.unpack(bytes);
  } catch (cause) {
    return failure(`not a MessagePack value: ${describeThrown(cause)}`, undefined);
  }
  // msgpackr decodes a map to a plain object; anything else (an array, bytes, a Date from a
  // timestamp extension, the placeholder it returns for the never-used byte 0xc1) is not a frame.
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) {
    return failure('a frame is a MessagePack map', undefined);
  }
  const hot = hotCheck(value as Record<string, unknown>);
  if (hot !== undefined) return { ok: true, frame: hot };
  let parsed: z.ZodSafeParseResult<TFrame>;
  try {
    parsed = schema.safeParse(value);
  } catch (cause) {
    // zod reports problems as values; a throw here would be a bug, but it must still never
    // escape into the session that received the bytes.
    return failure(`invalid frame: ${describeThrown(cause)}`, value);
  }
  if (parsed.success) return { ok: true, frame: parsed.data };
  const issues = parsed.error.issues.slice(0, MAX_REPORTED_ISSUES).map((issue) => ({
    path: issue.path,
    message: issue.message,
  }));
  const first = issues[0];
  const where = first && first.path.length > 0 ? `${first.path.map(String).join('.')}: ` : '';
  return failure(`invalid frame: ${where}${first?.message ?? 'does not match the schema'}`, value, issues);
}

function failure(message: string, value: unknown, issues: readonly FrameIssue[] = []): DecodeResult<never> {
  const record = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  const id = record.id;
  const frameType = record.type;
  return {
    ok: false,
    error: {
      code: ERROR_CODES.BAD_REQUEST.code,
      message,
      ...(typeof id === 'number' && Number.isInteger(id) && id >= 0 && id <= 0xffff_ffff ? { id } : {}),
      ...(typeof frameType === 'string' ? { frameType: frameType.slice(0, 64) } : {}),
      issues,
    },
  };
}

/** MessagePack's map headers: fixmap (0x80–0x8f), map 16 (0xde), map 32 (0xdf). */
function isMapHeader(firstByte: number): boolean {
  return (firstByte >= 0x80 && firstByte <= 0x8f) || firstByte === 0xde || firstByte === 0xdf;
}

function describeThrown(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
