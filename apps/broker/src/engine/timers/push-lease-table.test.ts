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
});
