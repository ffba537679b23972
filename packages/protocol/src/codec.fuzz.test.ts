import { seededRandom } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import { type DecodeResult, decodeFrame, encodeFrame } from './codec.js';
import { GOLDEN_FRAMES } from './golden-frames.fixture.js';
import { fromHex, toHex } from './hex.js';
import { type Frame, frameSchema } from './schemas/frames.js';

const SEED = 0x5eed_2026;
/**
 * Seeded, so every run checks the same inputs; sized so the run takes about a second on an idle
 * core. The three generators, not the count, give the coverage; 100,000 cases took 6 s, past
 * vitest's default timeout whenever the machine was busy.
 */
const CASES = 20_000;
/** CPU-bound: its own budget, many times the idle run, so a loaded CI machine never fails it. */
const FUZZ_BUDGET_MS = 60_000;
const goldens = GOLDEN_FRAMES.map((golden) => fromHex(golden.hex));

function randomBytes(random: () => number, maxLength: number): Uint8Array {
  const bytes = new Uint8Array(Math.floor(random() * (maxLength + 1)));
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
  return bytes;
}

/** A valid frame's bytes with one to four local damages: flips, overwrites, cuts, insertions. */
function mutate(random: () => number, source: Uint8Array): Uint8Array {
  let bytes = Uint8Array.from(source);
  const damages = 1 + Math.floor(random() * 4);
  for (let d = 0; d < damages; d++) {
    const at = Math.floor(random() * Math.max(bytes.length, 1));
    switch (Math.floor(random() * 5)) {
      case 0:
        if (bytes.length > 0) bytes[at] = (bytes[at] ?? 0) ^ (1 << Math.floor(random() * 8));
        break;
      case 1:
        if (bytes.length > 0) bytes[at] = Math.floor(random() * 256);
        break;
      case 2:
        bytes = bytes.subarray(0, at);
        break;
      case 3:
        bytes = Uint8Array.from([...bytes.subarray(0, at), ...randomBytes(random, 8), ...bytes.subarray(at)]);
        break;
      default: {
        // Interesting MessagePack type bytes: huge container headers, ext, reserved 0xc1.
        const interesting = [0xc1, 0xdc, 0xdd, 0xde, 0xdf, 0xc6, 0xdb, 0xc7, 0xc9, 0xd4, 0xff, 0x80, 0x90];
        if (bytes.length > 0) bytes[at] = interesting[Math.floor(random() * interesting.length)] ?? 0xc1;
      }
    }
  }
  return bytes;
}

/** Half-valid structures: real frames with one field replaced by a random value of another type. */
function corruptFrame(random: () => number, frame: Frame): Uint8Array {
  const values: unknown[] = [
    null,
    true,
    -1,
    2 ** 40,
    1.5,
    '',
    'x'.repeat(300),
    [],
    {},
    new Uint8Array(3),
    [1, 'a'],
  ];
  const copy: Record<string, unknown> = { ...frame };
  const keys = Object.keys(copy);
  const key = keys[Math.floor(random() * keys.length)] ?? 'type';
  copy[key] = values[Math.floor(random() * values.length)];
  return encodeFrame(copy as unknown as Frame);
}

function assertDecodeContract(bytes: Uint8Array): DecodeResult<Frame> {
  let result: DecodeResult<Frame>;
  try {
    result = decodeFrame(bytes);
  } catch (thrown) {
    throw new Error(`decodeFrame threw on ${toHex(bytes)}: ${String(thrown)}`);
  }
  if (result.ok) {
    // Whatever decodes must be a frame the schema accepts, i.e. safe for a handler to use.
    if (!frameSchema.safeParse(result.frame).success)
      throw new Error(`invalid frame accepted: ${toHex(bytes)}`);
  } else if (result.error.code !== 400 || typeof result.error.message !== 'string') {
    throw new Error(`unexpected error shape for ${toHex(bytes)}: ${JSON.stringify(result.error)}`);
  }
  return result;
}

describe('decodeFrame fuzz', () => {
  it(
    `turns ${CASES.toLocaleString('en')} random and mutated inputs into a frame or a 400, never a throw`,
    () => {
      const random = seededRandom(SEED);
      let frames = 0;
      let errors = 0;
      for (let i = 0; i < CASES; i++) {
        const golden = goldens[i % goldens.length] ?? new Uint8Array();
        const goldenFrame = GOLDEN_FRAMES[i % GOLDEN_FRAMES.length]?.frame ?? { type: 'ok', id: 0 };
        let bytes: Uint8Array;
        switch (i % 3) {
          case 0:
            bytes = randomBytes(random, 64);
            break;
          case 1:
            bytes = mutate(random, golden);
            break;
          default:
            bytes = corruptFrame(random, goldenFrame);
        }
        if (assertDecodeContract(bytes).ok) frames++;
        else errors++;
      }
      expect(frames + errors).toBe(CASES);
      // Mutations must sometimes survive (flipped bits inside strings), or the fuzzer tests nothing.
      expect(frames).toBeGreaterThan(100);
      expect(errors).toBeGreaterThan(CASES / 2);
    },
    FUZZ_BUDGET_MS,
  );

  it('survives hostile container headers without allocating what they claim', () => {
    for (const hex of [
      'dfffffffff',
      'ddffffffff',
      'c6ffffffff',
      'dbffffffff',
      'c9ffffffff01',
      '81a474797065dfffffffff',
    ]) {
      expect(assertDecodeContract(fromHex(hex)).ok).toBe(false);
    }
  });

  it('survives deep nesting', () => {
    const depth = 100_000;
    const bytes = new Uint8Array(depth + 1).fill(0x91);
    bytes[depth] = 0xc0;
    expect(assertDecodeContract(bytes).ok).toBe(false);
  });
});
