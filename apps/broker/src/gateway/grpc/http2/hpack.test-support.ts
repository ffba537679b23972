/**
 * Test helpers for HPACK: a Huffman encoder, builders for hand-written header blocks, and a capture
 * of the header blocks node:http2's client (nghttp2's encoder) really sends.
 */
import http2, { type OutgoingHttpHeaders } from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { HUFFMAN_CODE_LENGTHS, HUFFMAN_CODES } from './hpack-huffman.js';
import {
  CLIENT_PREFACE,
  FLAG,
  FRAME_TYPE,
  FrameReader,
  frameOf,
  LARGEST_MAX_FRAME_BYTES,
  unpadded,
} from './http2-frames.js';

/** A symbol's code and its bit length. */
export const codeOf = (symbol: number) =>
  [HUFFMAN_CODES[symbol] ?? 0, HUFFMAN_CODE_LENGTHS[symbol] ?? 0] as const;

/** Writes codes MSB first, then `padding` (a bit string; by default ones up to the byte's end). */
export function pack(codes: readonly (readonly [code: number, bits: number])[], padding?: string): Buffer {
  let bits = codes.map(([code, length]) => code.toString(2).padStart(length, '0')).join('');
  bits += padding ?? '1'.repeat((8 - (bits.length % 8)) % 8);
  if (bits.length % 8 !== 0) throw new Error(`${bits.length} bits do not fill whole bytes`);
  const out = Buffer.alloc(bits.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  return out;
}

/** Huffman-codes bytes, padded with ones (RFC 7541 §5.2). */
export function huffmanEncode(bytes: Uint8Array): Buffer {
  return pack([...bytes].map(codeOf));
}

/** An integer with an N-bit prefix (RFC 7541 §5.1), the prefix's other bits set to `flags`. */
export function int(value: number, prefixBits: number, flags = 0): number[] {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) return [flags | value];
  const out = [flags | mask];
  let rest = value - mask;
  while (rest >= 0x80) {
    out.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** A string literal, raw or Huffman-coded. */
export function str(text: string, huffman = false): number[] {
  const bytes = Buffer.from(text, 'latin1');
  const coded = huffman ? huffmanEncode(bytes) : bytes;
  return [...int(coded.length, 7, huffman ? 0x80 : 0), ...coded];
}

/** Representations of RFC 7541 §6, as bytes to concatenate into a block. */
export const rep = {
  indexed: (index: number) => int(index, 7, 0x80),
  /** Literal with incremental indexing; a number names a table index. */
  incremental: (name: string | number, value: string, huffman = false) =>
    typeof name === 'number'
      ? [...int(name, 6, 0x40), ...str(value, huffman)]
      : [0x40, ...str(name, huffman), ...str(value, huffman)],
  withoutIndexing: (name: string | number, value: string) =>
    typeof name === 'number' ? [...int(name, 4), ...str(value)] : [0x00, ...str(name), ...str(value)],
  neverIndexed: (name: string | number, value: string) =>
    typeof name === 'number' ? [...int(name, 4, 0x10), ...str(value)] : [0x10, ...str(name), ...str(value)],
  sizeUpdate: (size: number) => int(size, 5, 0x20),
};

/** Joins representations into a block. */
export const block = (...parts: number[][]) => Buffer.from(parts.flat());

/**
 * Sends each request through node:http2's client to a bare TCP server that reads the frames and
 * returns the header blocks (HEADERS and CONTINUATIONs joined), in the order they were sent, with
 * the authority the client used and how many CONTINUATION frames came. `settings` is the server's
 * SETTINGS payload.
 */
export async function captureRequestBlocks(
  requests: readonly OutgoingHttpHeaders[],
  settings: Buffer = Buffer.alloc(0),
): Promise<{ blocks: Buffer[]; authority: string; continuations: number }> {
  const sockets = new Set<net.Socket>();
  const blocks: Buffer[] = [];
  let continuations = 0;
  let done = () => {};
  const allSent = new Promise<void>((resolve) => {
    done = resolve;
  });
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.write(frameOf(FRAME_TYPE.SETTINGS, 0, 0, settings));
    const reader = new FrameReader(LARGEST_MAX_FRAME_BYTES);
    let preface = Buffer.alloc(0);
    let open: Buffer[] | undefined;
    socket.on('data', (chunk: Buffer) => {
      let bytes = chunk;
      if (preface.length < CLIENT_PREFACE.length) {
        preface = Buffer.concat([preface, chunk]);
        if (preface.length < CLIENT_PREFACE.length) return;
        if (!preface.subarray(0, CLIENT_PREFACE.length).equals(CLIENT_PREFACE))
          throw new Error('no client preface');
        bytes = preface.subarray(CLIENT_PREFACE.length);
      }
      reader.push(bytes, (frame) => {
        if (frame.type === FRAME_TYPE.SETTINGS && (frame.flags & FLAG.ACK) === 0) {
          socket.write(frameOf(FRAME_TYPE.SETTINGS, FLAG.ACK, 0));
        }
        if (frame.type === FRAME_TYPE.HEADERS) open = [unpadded(frame)];
        else if (frame.type === FRAME_TYPE.CONTINUATION) {
          open?.push(frame.payload);
          continuations += 1;
        } else return;
        if (open !== undefined && frame.flags & FLAG.END_HEADERS) {
          blocks.push(Buffer.concat(open));
          open = undefined;
          if (blocks.length === requests.length) done();
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = http2.connect(`http://127.0.0.1:${port}`);
  client.on('error', () => {});
  try {
    // After the server's SETTINGS, so a table size it sets applies to the blocks that follow.
    await new Promise((resolve) => client.once('remoteSettings', resolve));
    for (const headers of requests) client.request(headers, { endStream: true }).on('error', () => {});
    await allSent;
  } finally {
    client.destroy();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
  return { blocks, authority: `127.0.0.1:${port}`, continuations };
}
