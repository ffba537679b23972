import { describe, expect, it } from 'vitest';
import { asHex, bestMode, decodeBase64, preview } from './body-preview';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('body preview', () => {
  it('decodes base64 as the admin API sends bodies', () => {
    expect([...decodeBase64('AQID/w==')]).toEqual([1, 2, 3, 255]);
  });

  it('pretty-prints JSON, shows text as text and binary as hex', () => {
    expect(bestMode(bytes('{"id":1,"items":[2]}'))).toBe('json');
    expect(preview(bytes('{"id":1}'), 'json')).toBe('{\n  "id": 1\n}');
    expect(bestMode(bytes('hello\nworld'))).toBe('text');
    expect(bestMode(new Uint8Array([0xff, 0xfe, 0x00]))).toBe('hex');
    expect(bestMode(bytes('nul\u0000inside'))).toBe('hex');
    expect(preview(bytes('not json'), 'json')).toBe(asHex(bytes('not json')));
  });

  it('dumps hex with offsets and ASCII, and cuts long bodies', () => {
    expect(asHex(bytes('Hi!\n'))).toBe(`00000000  48 69 21 0a${' '.repeat(36)}  Hi!.`);
    const dump = asHex(new Uint8Array(40), 32);
    expect(dump.split('\n')).toHaveLength(3);
    expect(dump).toContain('… 8 more bytes');
  });
});
