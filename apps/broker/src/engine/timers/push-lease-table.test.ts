import { ManualClock } from '@ricochet/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from './manual-timers.test-support.js';
import { type PushLease, PushLeaseTable } from './push-lease-table.js';

const lease = (offset: number, deadlineMs: number, subscriptionId = offset % 2): PushLease => ({
  address: { group: 'g', topic: 't', offset },
  lease: 1,
  deadlineMs,
  subscriptionId,
});

describe('PushLeaseTable', () => {
  it('expires leases in deadline order and never a removed one', async () => {
    const clock = new ManualClock(0);
    const timers = new ManualTimers(clock);
    const expired: number[] = [];
    const table = new PushLeaseTable(clock, timers);
    table.start((l: PushLease) => expired.push(l.address.offset));
    for (const [offset, deadline] of [
      [1, 50],
      [2, 10],
      [3, 30],
      [4, 20],
      [5, 40],
    ] as const) {
      table.add(lease(offset, deadline));
    }
    table.remove({ group: 'g', topic: 't', offset: 3 });
    expect(
      table
        .heldBy(0)
        .map((l) => l.address.offset)
        .sort(),
    ).toEqual([2, 4]);
    await timers.advanceBy(25, async () => {});
    expect(expired).toEqual([2, 4]);
    await timers.advanceBy(100, async () => {});
    expect(expired).toEqual([2, 4, 5, 1]);
    expect(table.size).toBe(0);
  });

  it('frees a settled lease at once, so memory follows what is in flight', () => {
    const table = new PushLeaseTable(new ManualClock(0), new ManualTimers(new ManualClock(0)));
    table.start(() => {});
    for (let offset = 0; offset < 10_000; offset++) {
      table.add(lease(offset, 900_000 + offset));
      table.remove({ group: 'g', topic: 't', offset });
    }
    expect(table.size).toBe(0);
    expect(table.heldBy(0)).toEqual([]);
  });

  it('expires exactly the live leases, in deadline order, under any mix of adds and removes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 1_000 })),
          {
            maxLength: 200,
          },
        ),
        async (operations) => {
          const clock = new ManualClock(0);
          const timers = new ManualTimers(clock);
          const expired: number[] = [];
          const table = new PushLeaseTable(clock, timers);
          table.start((l: PushLease) => expired.push(l.deadlineMs));
          const live = new Map<number, number>();
          for (const [add, offset, deadline] of operations) {
            if (add) {
              table.add(lease(offset, deadline));
              live.set(offset, deadline);
            } else {
              table.remove({ group: 'g', topic: 't', offset });
              live.delete(offset);
            }
          }
          expect(table.size).toBe(live.size);
          await timers.advanceBy(2_000, async () => {});
          expect(expired).toEqual([...live.values()].sort((a, b) => a - b));
        },
      ),
      { numRuns: 200 },
    );
  });

  // 60 runs of up to a few hundred steps each: about 1.5 s alone, several times that on a loaded machine.
  it("expires what is due as time passes, a push stream's leases mostly in order and settled mostly in order", {
    timeout: 30_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            // Deliver the next offset, its deadline a timeout after now (sometimes a shorter one).
            {
              weight: 6,
              arbitrary: fc.record({
                kind: fc.constant('add' as const),
                timeoutMs: fc.constantFrom(500, 500, 500, 120),
              }),
            },
            // Settle one of the oldest leases, or any.
            {
              weight: 5,
              arbitrary: fc.record({
                kind: fc.constant('settle' as const),
                pick: fc.nat(),
                oldest: fc.boolean(),
              }),
            },
            {
              weight: 1,
              arbitrary: fc.record({
                kind: fc.constant('wait' as const),
                ms: fc.integer({ min: 1, max: 80 }),
              }),
            },
          ),
          { minLength: 400, maxLength: 1_500 },
        ),
        async (operations) => {
          const clock = new ManualClock(0);
          const timers = new ManualTimers(clock);
          const expired: PushLease[] = [];
          const table = new PushLeaseTable(clock, timers);
          table.start((l: PushLease) => expired.push(l));
          const live = new Map<number, PushLease>();
          let nextOffset = 0;
          for (const operation of operations) {
            if (operation.kind === 'add') {
              const added = lease(nextOffset++, clock.now() + operation.timeoutMs);
              table.add(added);
              live.set(added.address.offset, added);
            } else if (operation.kind === 'settle' && live.size > 0) {
              const offsets = [...live.keys()];
              const index = operation.oldest ? operation.pick % Math.min(3, offsets.length) : operation.pick;
              const offset = offsets[index % offsets.length] as number;
              expect(table.remove({ group: 'g', topic: 't', offset })?.address.offset).toBe(offset);
              live.delete(offset);
            } else if (operation.kind === 'wait') {
              const before = expired.length;
              await timers.advanceBy(operation.ms, async () => {});
              const due = [...live.values()].filter((l) => l.deadlineMs <= clock.now());
              // Exactly the due leases expired, in deadline order, and they left the table.
              expect(
                expired
                  .slice(before)
                  .map((l) => l.address.offset)
                  .sort((a, b) => a - b),
              ).toEqual(due.map((l) => l.address.offset).sort((a, b) => a - b));
              const deadlines = expired.slice(before).map((l) => l.deadlineMs);
              expect(deadlines).toEqual([...deadlines].sort((a, b) => a - b));
              for (const l of due) live.delete(l.address.offset);
            }
            expect(table.size).toBe(live.size);
          }
          expect(
            table
              .heldBy(1)
              .map((l) => l.address.offset)
              .sort((a, b) => a - b),
          ).toEqual([...live.values()].filter((l) => l.subscriptionId === 1).map((l) => l.address.offset));
        },
      ),
      { numRuns: 60 },
    );
  });
});
