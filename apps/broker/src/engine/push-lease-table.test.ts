import { ManualClock } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from './manual-timers.test-support.js';
import { type PushLease, PushLeaseTable } from './push-lease-table.js';

describe('PushLeaseTable', () => {
  it('expires leases in deadline order, skipping removed ones', async () => {
    const clock = new ManualClock(0);
    const timers = new ManualTimers(clock);
    const expired: number[] = [];
    const table = new PushLeaseTable(clock, timers, (lease: PushLease) => expired.push(lease.address.offset));
    const lease = (offset: number, deadlineMs: number): PushLease => ({
      address: { group: 'g', topic: 't', offset },
      lease: 1,
      deadlineMs,
      subscriptionId: offset % 2,
    });
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
});
