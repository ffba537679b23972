import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OffsetRuns } from './offset-runs.js';

/** The offsets `runs` holds, read back through `has` over `[0, limit)`. */
function offsetsIn(runs: OffsetRuns, limit: number): number[] {
  const held: number[] = [];
  for (let offset = 0; offset < limit; offset++) if (runs.has(offset)) held.push(offset);
  return held;
}

describe('OffsetRuns', () => {
  it('joins neighbours into one run, in any order of arrival', () => {
    const runs = new OffsetRuns();
    for (const offset of [5, 3, 4, 9, 7, 8]) runs.add(offset);
    expect(runs.toFlat()).toEqual([3, 6, 7, 10]);
    runs.add(6);
    expect(runs.toFlat()).toEqual([3, 10]);
    expect(runs.runCount).toBe(1);
  });

  it('drops what lies below an offset, cutting a run it falls in', () => {
    const runs = OffsetRuns.fromFlat([3, 6, 8, 12]);
    runs.dropBelow(9);
    expect(runs.toFlat()).toEqual([9, 12]);
    runs.dropBelow(20);
    expect(runs.isEmpty).toBe(true);
  });

  it('reads back what it wrote, and leaves out pairs that are no runs', () => {
    expect(OffsetRuns.fromFlat([1, 3, 5, 6]).toFlat()).toEqual([1, 3, 5, 6]);
    // Reversed, overlapping, touching, empty, or not whole numbers: never written so.
    expect(OffsetRuns.fromFlat([5, 3, 1, 4, 4, 6, 7, 7, 8.5, 9, 10, 11]).toFlat()).toEqual([1, 4, 10, 11]);
    expect(OffsetRuns.fromFlat(undefined).isEmpty).toBe(true);
  });

  it('holds exactly the offsets added and not dropped', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 150 }),
        fc.integer({ min: 0, max: 220 }),
        (added, floor) => {
          const runs = new OffsetRuns();
          for (const offset of added) runs.add(offset);
          runs.dropBelow(floor);
          const expected = [...new Set(added)].filter((offset) => offset >= floor).sort((a, b) => a - b);
          expect(offsetsIn(runs, 221)).toEqual(expected);
          expect(offsetsIn(OffsetRuns.fromFlat(runs.toFlat()), 221)).toEqual(expected);
          const flat = runs.toFlat();
          // Disjoint and not touching: each run starts past the previous one's end.
          for (let i = 2; i < flat.length; i += 2) expect(flat[i]).toBeGreaterThan(flat[i - 1] as number);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('adds a run of offsets as adding each of them would (a run of acks, issue 43)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 60 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 12 })), {
          maxLength: 20,
        }),
        (single, spans) => {
          const byRun = new OffsetRuns();
          const oneByOne = new OffsetRuns();
          for (const offset of single) {
            byRun.add(offset);
            oneByOne.add(offset);
          }
          for (const [start, length] of spans) {
            byRun.addRun(start, start + length);
            for (let offset = start; offset < start + length; offset++) oneByOne.add(offset);
          }
          expect(byRun.toFlat()).toEqual(oneByOne.toFlat());
        },
      ),
      { numRuns: 300 },
    );
  });
});
