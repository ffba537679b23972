/**
 * HPACK's Huffman code (RFC 7541 §5.2, Appendix B) and its decoder. The code is canonical, so only
 * the length of each symbol's code is stored; the codes are rebuilt from the lengths when the
 * module loads, and the tree and a byte-at-a-time decoding table when the first string is decoded.
 */

/** The end-of-string symbol: never sent inside a string, its code's prefix pads the last byte. */
export const HUFFMAN_EOS = 256;

/** The bit length of each symbol's code, symbols 0..255 then EOS (RFC 7541 Appendix B). */
export const HUFFMAN_CODE_LENGTHS: Readonly<Uint8Array> = Uint8Array.from([
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28,
  28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7,
  8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19,
  13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13,
  28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21,
  22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23,
  22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25,
  25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
]);

/**
 * Each symbol's code, right-aligned in HUFFMAN_CODE_LENGTHS[symbol] bits. Canonical: walking the
 * symbols in order of (length, symbol), each code is the previous one plus one, shifted left by
 * however much longer it is.
 */
export const HUFFMAN_CODES: Readonly<Uint32Array> = (() => {
  const symbols = Array.from(HUFFMAN_CODE_LENGTHS.keys()).sort(
    (a, b) => (HUFFMAN_CODE_LENGTHS[a] ?? 0) - (HUFFMAN_CODE_LENGTHS[b] ?? 0) || a - b,
  );
  const codes = new Uint32Array(HUFFMAN_CODE_LENGTHS.length);
  let code = 0;
  let previousLength = 0;
  for (const symbol of symbols) {
    const length = HUFFMAN_CODE_LENGTHS[symbol] ?? 0;
    // Multiplying rather than shifting keeps the arithmetic out of 32-bit signed territory.
    code *= 2 ** (length - previousLength);
    codes[symbol] = code;
    code += 1;
    previousLength = length;
  }
  return codes;
})();

/** Why a Huffman-coded string does not decode (RFC 7541 §5.2). */
export class HuffmanDecodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HuffmanDecodingError';
  }
}

// The decoder is a state machine whose states are the Huffman tree's 256 inner nodes (a complete
// binary tree with 257 leaves has 256 of them; the root is state 0). It reads one input byte per
// step: transitions[state << 8 | byte] packs the state reached, how many symbols the byte completed
// (at most two: codes are at least 5 bits, so a byte ends one code and holds at most one more whole)
// and those symbols. The tree walking is done once per (state, byte) instead of once per bit at run
// time: 64K entries of 4 bytes, built in a few milliseconds at the first string decoded, so a
// broker without a gRPC port never builds them.
const NEXT_STATE_MASK = 0xff;
const COUNT_SHIFT = 8;
const FIRST_SHIFT = 10;
const SECOND_SHIFT = 18;
const FAILED = 1 << 26;

const INNER_NODES = 256;

interface DecodingTables {
  readonly transitions: Uint32Array;
  // accepting[state]: the string may end here. The bits read since the last symbol are then its
  // padding, which must be all ones (a prefix of EOS) and shorter than a byte.
  readonly accepting: Uint8Array;
  // The depth of a state on the all-ones path from the root, or 0 elsewhere: says why a string
  // ending in that state is refused.
  readonly onesDepth: Uint8Array;
}

let decodingTables: DecodingTables | undefined;

function buildDecodingTables(): DecodingTables {
  const accepting = new Uint8Array(INNER_NODES);
  const onesDepth = new Uint8Array(INNER_NODES);
  // children[node * 2 + bit]: an inner node's id, or ~symbol for a leaf.
  const children = new Int16Array(INNER_NODES * 2);
  let nodes = 1;
  for (let symbol = 0; symbol <= HUFFMAN_EOS; symbol++) {
    const length = HUFFMAN_CODE_LENGTHS[symbol] ?? 0;
    const code = HUFFMAN_CODES[symbol] ?? 0;
    let node = 0;
    for (let bit = length - 1; bit > 0; bit--) {
      const slot = node * 2 + (Math.floor(code / 2 ** bit) & 1);
      if (children[slot] === 0) {
        children[slot] = nodes;
        nodes += 1;
      }
      node = children[slot] ?? 0;
    }
    children[node * 2 + (code & 1)] = ~symbol;
  }
  // Node ids are given parent-first, so a node's depth is known before its children are visited.
  accepting[0] = 1;
  const onesPath = new Uint8Array(INNER_NODES);
  onesPath[0] = 1;
  for (let node = 0; node < INNER_NODES; node++) {
    const ones = children[node * 2 + 1] ?? 0;
    if (onesPath[node] === 1 && ones > 0) {
      onesPath[ones] = 1;
      onesDepth[ones] = (onesDepth[node] ?? 0) + 1;
      accepting[ones] = onesDepth[ones] < 8 ? 1 : 0;
    }
  }

  const transitions = new Uint32Array(INNER_NODES * 256);
  for (let state = 0; state < INNER_NODES; state++) {
    for (let byte = 0; byte < 256; byte++) {
      let node = state;
      let count = 0;
      let emitted = 0;
      let failed = 0;
      for (let bit = 7; bit >= 0; bit--) {
        const child = children[node * 2 + ((byte >> bit) & 1)] ?? 0;
        if (child >= 0) {
          node = child;
          continue;
        }
        const symbol = ~child;
        if (symbol === HUFFMAN_EOS) {
          failed = FAILED;
          break;
        }
        emitted |= symbol << (count === 0 ? FIRST_SHIFT : SECOND_SHIFT);
        count += 1;
        node = 0;
      }
      transitions[(state << 8) | byte] = failed | emitted | (count << COUNT_SHIFT) | node;
    }
  }
  return { transitions, accepting, onesDepth };
}

// Decoded bytes land here before becoming a string; grown on demand, never shrunk.
let scratch = Buffer.allocUnsafe(1024);

/**
 * Decodes the Huffman-coded string in `source[start..end)` into a latin1 string. Throws a
 * HuffmanDecodingError on EOS inside the string, or padding longer than 7 bits or not all ones.
 */
export function huffmanDecode(source: Uint8Array, start: number, end: number): string {
  // The shortest code is 5 bits, so n bytes hold at most 8n/5 symbols.
  const most = Math.floor(((end - start) * 8) / 5);
  if (scratch.length < most) scratch = Buffer.allocUnsafe(Math.max(most, scratch.length * 2));
  const out = scratch;
  decodingTables ??= buildDecodingTables();
  const { transitions, accepting, onesDepth } = decodingTables;
  let state = 0;
  let length = 0;
  for (let i = start; i < end; i++) {
    const entry = transitions[(state << 8) | (source[i] ?? 0)] ?? 0;
    if ((entry & FAILED) !== 0) throw new HuffmanDecodingError('Huffman string contains EOS');
    const count = (entry >> COUNT_SHIFT) & 3;
    if (count > 0) {
      out[length++] = (entry >> FIRST_SHIFT) & 0xff;
      if (count > 1) out[length++] = (entry >> SECOND_SHIFT) & 0xff;
    }
    state = entry & NEXT_STATE_MASK;
  }
  if (accepting[state] !== 1) {
    throw new HuffmanDecodingError(
      (onesDepth[state] ?? 0) >= 8
        ? 'Huffman string padded with more than 7 bits'
        : 'Huffman string ends mid-symbol (padding is not a prefix of EOS)',
    );
  }
  return out.toString('latin1', 0, length);
}
