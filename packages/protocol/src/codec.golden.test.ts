import { describe, expect, it } from 'vitest';
import { decodeFrame, encodeFrame } from './codec.js';
import { GOLDEN_FRAMES } from './golden-frames.fixture.js';
import { fromHex, toHex } from './hex.js';
import { frameSchema } from './schemas/frames.js';

describe('golden frames', () => {
  it('has one fixture for every frame type', () => {
    const fixtureTypes = GOLDEN_FRAMES.map((golden) => golden.frame.type).sort();
    const schemaTypes = frameSchema.options.map((option) => option.shape.type.value).sort();
    expect(fixtureTypes).toEqual(schemaTypes);
  });

  it.each(GOLDEN_FRAMES.map((golden) => [golden.name, golden] as const))(
    '%s decodes and re-encodes byte for byte',
    (_, golden) => {
      const decoded = decodeFrame(fromHex(golden.hex));
      expect(decoded).toEqual({ ok: true, frame: golden.frame });
      if (!decoded.ok) return;
      expect(toHex(encodeFrame(decoded.frame))).toBe(golden.hex);
    },
  );

  it.each(GOLDEN_FRAMES.map((golden) => [golden.name, golden] as const))(
    '%s encodes to its fixture',
    (_, golden) => {
      expect(toHex(encodeFrame(golden.frame))).toBe(golden.hex);
    },
  );
});
