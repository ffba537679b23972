import { describe, expect, it } from 'vitest';
import { encodeFrame } from './codec.js';
import { MAX_FRAME_NESTING, nestsDeeperThan } from './nesting-depth.js';
import type { Frame } from './schemas/frames.js';

/** `depth` one-element arrays around nil, optionally as the value of a one-entry map. */
function nested(depth: number, inMap = false): Uint8Array {
  const prefix = inMap ? [0x81, 0xa4, 0x74, 0x79, 0x70, 0x65] : [];
  const bytes = new Uint8Array(prefix.length + depth + 1).fill(0x91);
  bytes.set(prefix);
  bytes[bytes.length - 1] = 0xc0;
  return bytes;
}

describe('nestsDeeperThan', () => {
  it('counts levels exactly, at the top and inside a map', () => {
    expect(nestsDeeperThan(nested(3), 3)).toBe(false);
    expect(nestsDeeperThan(nested(4), 3)).toBe(true);
    expect(nestsDeeperThan(nested(2, true), 3)).toBe(false);
    expect(nestsDeeperThan(nested(3, true), 3)).toBe(true);
    expect(nestsDeeperThan(nested(10_000, true), MAX_FRAME_NESTING)).toBe(true);
  });

  it('passes every real frame, skipping strings, binaries, numbers and extension values by length', () => {
    const frame = {
      type: 'send',
      id: 4_294_967_295,
      messages: [
        {
          messageId: 'x'.repeat(300),
          topic: 'orders',
          body: new Uint8Array(70_000),
          bornAt: 1.5,
          properties: { a: 'b', negative: String(-1) },
          keys: ['k1', 'k2'],
          delayMs: -5,
        },
      ],
    };
    expect(nestsDeeperThan(encodeFrame(frame as unknown as Frame), 4)).toBe(false);
    expect(nestsDeeperThan(encodeFrame(frame as unknown as Frame), 3)).toBe(true);
    // Extension values (timestamps) and every int width are skipped by their length.
    const scalars = new Uint8Array([
      0x95, 0xd6, 0xff, 0, 0, 0, 1, 0xcf, 0, 0, 0, 0, 0, 0, 0, 1, 0xd0, 0x80, 0xca, 0, 0, 0, 0, 0x91, 0x90,
    ]);
    expect(nestsDeeperThan(scalars, 2)).toBe(false);
    expect(nestsDeeperThan(scalars, 1)).toBe(true);
  });

  it('leaves truncated or malformed input to the decoder', () => {
    expect(nestsDeeperThan(new Uint8Array([0x92, 0x91]), 8)).toBe(false);
    expect(nestsDeeperThan(new Uint8Array([0x91, 0xc1]), 8)).toBe(false);
    expect(nestsDeeperThan(new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff]), 8)).toBe(false);
  });
});
