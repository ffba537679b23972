import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codeOf, huffmanEncode, pack } from './hpack.test-support.js';
import { HUFFMAN_CODE_LENGTHS, HUFFMAN_EOS, HuffmanDecodingError, huffmanDecode } from './hpack-huffman.js';

const decode = (bytes: Uint8Array) => huffmanDecode(bytes, 0, bytes.length);

describe('HPACK Huffman code', () => {
  it('rebuilds the canonical codes of RFC 7541 Appendix B from the lengths', () => {
    expect(HUFFMAN_CODE_LENGTHS).toHaveLength(257);
    expect(codeOf(0)).toEqual([0x1ff8, 13]);
    expect(codeOf(1)).toEqual([0x7fffd8, 23]);
    expect(codeOf(2)).toEqual([0xfffffe2, 28]);
    expect(codeOf(32)).toEqual([0x14, 6]);
    expect(codeOf(48)).toEqual([0x0, 5]);
    expect(codeOf(97)).toEqual([0x3, 5]);
    expect(codeOf(255)).toEqual([0x3ffffee, 26]);
    expect(codeOf(HUFFMAN_EOS)).toEqual([0x3fffffff, 30]);
  });

  it('has lengths whose Kraft sum is exactly 1: a complete prefix code', () => {
    const sum = [...HUFFMAN_CODE_LENGTHS].reduce((total, length) => total + 2 ** (30 - length), 0);
    expect(sum).toBe(2 ** 30);
    // Every code fits its length, and no two symbols share one.
    const codes = new Set<string>();
    for (let symbol = 0; symbol <= HUFFMAN_EOS; symbol++) {
      const [code, length] = codeOf(symbol);
      expect(code).toBeLessThan(2 ** length);
      codes.add(`${length}:${code}`);
    }
    expect(codes.size).toBe(257);
  });
});

describe('huffmanDecode', () => {
  it('decodes every single byte value', () => {
    for (let byte = 0; byte < 256; byte++) {
      expect(decode(huffmanEncode(Uint8Array.of(byte)))).toBe(String.fromCharCode(byte));
    }
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(decode(huffmanEncode(all))).toBe(Buffer.from(all).toString('latin1'));
  });

  it('decodes the examples of RFC 7541 Appendix C.4', () => {
    const examples: [string, string][] = [
      ['f1e3c2e5f23a6ba0ab90f4ff', 'www.example.com'],
      ['a8eb10649cbf', 'no-cache'],
      ['25a849e95ba97d7f', 'custom-key'],
      ['25a849e95bb8e8b4bf', 'custom-value'],
    ];
    for (const [hex, text] of examples) {
      expect(decode(Buffer.from(hex, 'hex'))).toBe(text);
      expect(huffmanEncode(Buffer.from(text, 'latin1')).toString('hex')).toBe(hex);
    }
  });

  it('decodes the empty string, and only the range it is given', () => {
    expect(decode(Buffer.alloc(0))).toBe('');
    const coded = huffmanEncode(Buffer.from('grpc-timeout'));
    const framed = Buffer.concat([Buffer.of(0x00, 0x00), coded, Buffer.of(0x00)]);
    expect(huffmanDecode(framed, 2, 2 + coded.length)).toBe('grpc-timeout');
  });

  it('round-trips any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(decode(huffmanEncode(bytes))).toBe(Buffer.from(bytes).toString('latin1'));
      }),
    );
  });

  it('accepts padding of 1 to 7 one bits', () => {
    // '0' is 00000 (5 bits), 'a' 00011 (5 bits): 10 bits leave 6 of padding; then 1..7 after 'aaa'.
    for (let count = 1; count <= 8; count++) {
      const bytes = Buffer.from('a'.repeat(count));
      expect(decode(huffmanEncode(bytes))).toBe(bytes.toString('latin1'));
    }
  });

  it('refuses padding of 8 bits or more', () => {
    expect(() => decode(Buffer.of(0xff))).toThrow(/more than 7 bits/);
    expect(() => decode(pack([codeOf(97)], '11111111111'))).toThrow(/more than 7 bits/);
    expect(() => decode(pack([codeOf(97), codeOf(97)], '111111111111111111111111111111'))).toThrow(
      HuffmanDecodingError,
    );
  });

  it('refuses padding that is not all ones', () => {
    expect(() => decode(pack([codeOf(97)], '110'))).toThrow(/not a prefix of EOS/);
    expect(() => decode(pack([codeOf(97)], '011'))).toThrow(HuffmanDecodingError);
    // 00000 is '0'; three zero bits after it are a partial code, not padding.
    expect(() => decode(Buffer.of(0x00))).toThrow(HuffmanDecodingError);
  });

  it('refuses EOS inside the string, wherever it falls', () => {
    expect(() => decode(pack([codeOf(HUFFMAN_EOS)]))).toThrow(/EOS/);
    expect(() => decode(pack([codeOf(97), codeOf(HUFFMAN_EOS), codeOf(98)]))).toThrow(/EOS/);
    for (let lead = 0; lead < 8; lead++) {
      const codes = [...Array.from({ length: lead }, () => codeOf(48)), codeOf(HUFFMAN_EOS)];
      expect(() => decode(pack(codes))).toThrow(HuffmanDecodingError);
    }
  });
});
