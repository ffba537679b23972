import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ScheduleKey } from '../../store/records.js';
import { compareKeys, KeptEntries } from './kept-entries.js';

type Step =
  | { readonly op: 'add'; readonly group: string; readonly dueAtMs: number; readonly offset: number }
  | { readonly op: 'remove'; readonly pick: number }
  | {
      readonly op: 'due';
      readonly group: string;
      readonly nowMs: number;
      readonly limit: number;
      readonly givenBack: number;
    };

const groups = fc.constantFrom('g', 'h');
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('add' as const),
    group: groups,
    dueAtMs: fc.integer({ min: 0, max: 50 }),
    offset: fc.integer({ min: 0, max: 30 }),
  }),
  fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({
    op: fc.constant('due' as const),
    group: groups,
    nowMs: fc.integer({ min: 0, max: 60 }),
    limit: fc.integer({ min: 1, max: 8 }),
    givenBack: fc.integer({ min: 0, max: 8 }),
  }),
);

describe('KeptEntries', () => {
  it('answers as a sorted list of the entries kept, removed, taken and given back would', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const kept = new KeptEntries();
        let model: ScheduleKey[] = [];
        const same = (a: ScheduleKey, b: ScheduleKey) => a[0] === b[0] && compareKeys(a, b) === 0;
        for (const s of steps) {
          if (s.op === 'add') {
            const key: ScheduleKey = [s.group, s.dueAtMs, 't', s.offset];
            // The scheduler never keeps a key twice.
            if (model.some((k) => same(k, key))) continue;
            kept.add(key, { kind: 'retryDue' });
            model.push(key);
          } else if (s.op === 'remove') {
            const key = model[s.pick % Math.max(1, model.length)];
            if (!key) {
              expect(kept.remove(['g', 0, 't', 0])).toBe(false);
              continue;
            }
            expect(kept.remove(key)).toBe(true);
            expect(kept.remove(key)).toBe(false);
            model = model.filter((k) => !same(k, key));
          } else {
            const expected = model
              .filter((k) => k[0] === s.group && k[1] <= s.nowMs)
              .sort(compareKeys)
              .slice(0, s.limit);
            const taken = kept.takeDue(s.group, s.nowMs, s.limit);
            expect(taken.map(({ key }) => key)).toEqual(expected);
            // The scheduler gives back those its handler did not take: the last ones.
            const keptAgain = taken.slice(taken.length - Math.min(s.givenBack, taken.length));
            for (const entry of keptAgain) kept.putBack(entry);
            model = model.filter((k) => !expected.includes(k) || keptAgain.some((e) => e.key === k));
          }
          expect(kept.size).toBe(model.length);
          for (const group of ['g', 'h']) {
            const mine = model.filter((k) => k[0] === group).sort(compareKeys);
            expect(kept.earliest(group)).toBe(mine[0]?.[1]);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
