import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BrokerStore } from '../../store/broker-store.js';
import { openLmdbStore } from '../../store/lmdb-store.js';
import { ManualTimers } from './manual-timers.test-support.js';
import { type DueEntry, RECOVERABLE_HORIZON_MS, Scheduler } from './scheduler.js';

let dir: string;
let store: BrokerStore;
let clock: ManualClock;
let timers: ManualTimers;
let fired: { atMs: number; group: string; offset: number }[];
let capacity: number;
let scheduler: Scheduler;

function newScheduler(): Scheduler {
  return new Scheduler({ store, clock, timers });
}

function onDue(group: string, due: readonly DueEntry[]): number {
  const taken = due.slice(0, capacity);
  for (const { key } of taken) fired.push({ atMs: clock.now(), group, offset: key[3] });
  return taken.length;
}

const settle = async () => {
  await scheduler.whenIdle();
  await store.committed();
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-scheduler-'));
  store = openLmdbStore({ path: dir });
  clock = new ManualClock(1_000_000);
  timers = new ManualTimers(clock);
  fired = [];
  capacity = Number.POSITIVE_INFINITY;
  scheduler = newScheduler();
  scheduler.start(onDue);
});

afterEach(async () => {
  scheduler.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Scheduler', () => {
  it('fires each entry at its due time, earliest first, with one timer', async () => {
    scheduler.add('g', 1_000_300, 't', 3, { kind: 'retryDue' });
    scheduler.add('g', 1_000_100, 't', 1, { kind: 'retryDue' });
    scheduler.add('h', 1_000_200, 't', 2, { kind: 'retryDue' });
    await timers.advanceBy(99, settle);
    expect(fired).toEqual([]);
    await timers.advanceBy(1_000, settle);
    expect(fired).toEqual([
      { atMs: 1_000_100, group: 'g', offset: 1 },
      { atMs: 1_000_200, group: 'h', offset: 2 },
      { atMs: 1_000_300, group: 'g', offset: 3 },
    ]);
    expect(store.listScheduleGroups()).toEqual([]);
  });

  it('re-arms for an entry earlier than the armed one', async () => {
    scheduler.add('g', 1_010_000, 't', 2, { kind: 'retryDue' });
    scheduler.add('g', 1_000_010, 't', 1, { kind: 'retryDue' });
    await timers.advanceBy(10, settle);
    expect(fired.map((f) => f.offset)).toEqual([1]);
  });

  it('does not fire removed entries', async () => {
    const key = scheduler.add('g', 1_000_010, 't', 1, { kind: 'leaseExpiry', lease: 1 });
    scheduler.remove(key);
    await timers.advanceBy(100, settle);
    expect(fired).toEqual([]);
  });

  it('fires entries that fell due while it was stopped, right after start', async () => {
    scheduler.add('g', 1_000_050, 't', 1, { kind: 'retryDue' });
    await store.committed();
    scheduler.stop();
    clock.advanceBy(60_000);
    scheduler = newScheduler();
    scheduler.start(onDue);
    await timers.advanceBy(0, settle);
    expect(fired).toEqual([{ atMs: 1_060_000, group: 'g', offset: 1 }]);
  });

  it('leaves entries in the store while a group has no room, until resumed', async () => {
    capacity = 1;
    for (const offset of [1, 2, 3]) scheduler.add('g', 1_000_010, 't', offset, { kind: 'retryDue' });
    await timers.advanceBy(10, settle);
    expect(fired.map((f) => f.offset)).toEqual([1]);
    expect(scheduler.pausedGroups).toBe(1);
    expect(store.countSchedule('g')).toBe(2);
    capacity = 5;
    scheduler.resume('g');
    await timers.advanceBy(0, settle);
    expect(fired.map((f) => f.offset)).toEqual([1, 2, 3]);
  });

  it('works through more due entries than one batch', async () => {
    for (let offset = 0; offset < 600; offset++)
      scheduler.add('g', 1_000_001, 't', offset, { kind: 'retryDue' });
    await timers.advanceBy(1, settle);
    expect(fired).toHaveLength(600);
    expect(new Set(fired.map((f) => f.offset)).size).toBe(600);
  });

  it('fires an entry added behind the ones already taken, committed or not', async () => {
    scheduler.add('g', 1_000_100, 't', 1, { kind: 'retryDue' });
    scheduler.add('g', 1_000_200, 't', 3, { kind: 'retryDue' });
    await timers.advanceBy(200, settle);
    expect(fired.map((f) => f.offset)).toEqual([1, 3]);
    // Due in the past, and earlier than the last key taken: the store must be read from before it.
    scheduler.add('g', 1_000_150, 't', 2, { kind: 'retryDue' });
    await store.committed();
    await timers.advanceBy(0, settle);
    expect(fired.map((f) => f.offset)).toEqual([1, 3, 2]);
    expect(store.countSchedule('g')).toBe(0);
  });

  it('does not read again the entries it took while their removal commits', async () => {
    for (let offset = 0; offset < 50; offset++)
      scheduler.add('g', 1_000_001 + offset, 't', offset, { kind: 'retryDue' });
    await store.committed();
    const read: number[] = [];
    const readDueSchedule = store.readDueSchedule.bind(store);
    store.readDueSchedule = (...args) => {
      const due = readDueSchedule(...args);
      read.push(...due.map(({ key }) => key[3]));
      return due;
    };
    // One pass per millisecond; no commit in between, so every removal is still pending.
    for (let ms = 0; ms < 50; ms++) await timers.advanceBy(1, async () => {});
    expect(fired).toHaveLength(50);
    expect(read).toHaveLength(50);
  });

  /**
   * A scheduler whose batches each take `batchMs` of work (on a work clock of the test's own) and
   * the turn of the event loop (timer callback) each batch ran in.
   */
  function timedScheduler(batchMs: number): { passes: number[] } {
    scheduler.stop();
    const passes: number[] = [];
    let pass = 0;
    let workMs = 0;
    const counting: typeof timers = Object.create(timers);
    counting.setTimer = (delayMs, callback) =>
      timers.setTimer(delayMs, () => {
        pass++;
        callback();
      });
    scheduler = new Scheduler({ store, clock, timers: counting, batchSize: 4, workClock: () => workMs });
    scheduler.start((group, due) => {
      workMs += batchMs;
      passes.push(pass);
      return onDue(group, due);
    });
    return { passes };
  }

  it('yields the event loop after about a millisecond of work, and goes on in the next turn', async () => {
    const { passes } = timedScheduler(0.5);
    for (let offset = 0; offset < 40; offset++)
      scheduler.add('g', 1_000_001, 't', offset, { kind: 'retryDue' });
    await timers.advanceBy(10, settle);
    expect(fired).toHaveLength(40);
    // Two batches a turn (1 ms of work), not one pass of sixteen rounds.
    expect(passes).toEqual([1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
  });

  it('takes a bigger share of the loop, up to 4 ms a turn, when what it fires is 10 ms late or more', async () => {
    // Due 50 ms before the scheduler starts, as after a restart.
    for (let offset = 0; offset < 60; offset++)
      void store.putSchedule(['g', 1_000_000 - 50, 't', offset], { kind: 'retryDue' });
    await store.committed();
    const { passes } = timedScheduler(0.5);
    await timers.advanceBy(0, settle);
    expect(fired).toHaveLength(60);
    // Eight batches a turn (4 ms of work) while catching up, where two would be on time.
    expect(passes).toEqual([...Array<number>(8).fill(1), ...Array<number>(7).fill(2)]);
  });

  it('keeps a deferred entry in memory: it fires on time, and a removal before the flush writes nothing', async () => {
    scheduler.add('g', 1_000_100, 't', 1, { kind: 'leaseExpiry', lease: 1 }, 'deferred');
    const acked = scheduler.add('g', 1_000_200, 't', 2, { kind: 'leaseExpiry', lease: 1 }, 'deferred');
    await store.committed();
    expect(store.countSchedule('g')).toBe(0);
    await timers.advanceBy(100, settle);
    expect(fired.map((f) => [f.atMs, f.offset])).toEqual([[1_000_100, 1]]);
    scheduler.remove(acked);
    scheduler.writeDeferred();
    await store.committed();
    expect(store.countSchedule('g')).toBe(0);
    await timers.advanceBy(1_000, settle);
    expect(fired).toHaveLength(1);
  });

  it('writes the deferred entries still scheduled when flushed, and removes them from the store after', async () => {
    const key = scheduler.add('g', 1_000_100, 't', 1, { kind: 'leaseExpiry', lease: 1 }, 'deferred');
    scheduler.writeDeferred();
    await store.committed();
    expect(store.getSchedule(key)).toEqual({ kind: 'leaseExpiry', lease: 1 });
    scheduler.writeDeferred();
    scheduler.remove(key);
    await store.committed();
    expect(store.countSchedule('g')).toBe(0);
    await timers.advanceBy(1_000, settle);
    expect(fired).toEqual([]);
  });

  describe('recoverable entries', () => {
    it('keeps one due within the horizon in memory: it fires on time and the store never holds it', async () => {
      scheduler.add('g', 1_000_200, 't', 2, { kind: 'retryDue' }, 'recoverable');
      scheduler.add('g', 1_000_100, 't', 1, { kind: 'retryDue' }, 'recoverable');
      await store.committed();
      expect(store.listScheduleGroups()).toEqual([]);
      await timers.advanceBy(99, settle);
      expect(fired).toEqual([]);
      await timers.advanceBy(101, settle);
      expect(fired.map((f) => [f.atMs, f.offset])).toEqual([
        [1_000_100, 1],
        [1_000_200, 2],
      ]);
      expect(store.listScheduleGroups()).toEqual([]);
    });

    it('writes one due past the horizon, as `now`', async () => {
      const key = scheduler.add(
        'g',
        1_000_000 + RECOVERABLE_HORIZON_MS + 1,
        't',
        1,
        { kind: 'retryDue' },
        'recoverable',
      );
      const kept = scheduler.add(
        'g',
        1_000_000 + RECOVERABLE_HORIZON_MS,
        't',
        2,
        { kind: 'retryDue' },
        'recoverable',
      );
      await store.committed();
      expect(store.getSchedule(key)).toEqual({ kind: 'retryDue' });
      expect(store.getSchedule(kept)).toBeUndefined();
      await timers.advanceBy(RECOVERABLE_HORIZON_MS + 1, settle);
      expect(fired.map((f) => f.offset)).toEqual([2, 1]);
      expect(store.countSchedule('g')).toBe(0);
    });

    it('writes them once as many as it keeps at most are kept', async () => {
      scheduler.stop();
      scheduler = new Scheduler({ store, clock, timers, maxKeptEntries: 2 });
      scheduler.start(onDue);
      for (const offset of [1, 2, 3])
        scheduler.add('g', 1_000_010, 't', offset, { kind: 'retryDue' }, 'recoverable');
      await store.committed();
      expect(store.countSchedule('g')).toBe(1);
      await timers.advanceBy(10, settle);
      expect(fired.map((f) => f.offset)).toEqual([1, 2, 3]);
      expect(store.countSchedule('g')).toBe(0);
      // Room again once those fired.
      scheduler.add('g', 1_000_020, 't', 4, { kind: 'retryDue' }, 'recoverable');
      await store.committed();
      expect(store.countSchedule('g')).toBe(0);
    });

    it('forgets a removed one, writing nothing, and never fires it', async () => {
      const key = scheduler.add('g', 1_000_010, 't', 1, { kind: 'retryDue' }, 'recoverable');
      scheduler.add('g', 1_000_020, 't', 2, { kind: 'retryDue' }, 'recoverable');
      const write = vi.spyOn(store, 'deleteSchedule');
      scheduler.remove(key);
      expect(write).not.toHaveBeenCalled();
      await timers.advanceBy(100, settle);
      expect(fired.map((f) => f.offset)).toEqual([2]);
    });

    it('hands kept and written entries over together in due order, a batch at a time', async () => {
      scheduler.stop();
      scheduler = new Scheduler({ store, clock, timers, batchSize: 4 });
      scheduler.start(onDue);
      for (let offset = 0; offset < 20; offset++) {
        const durability = offset % 3 === 0 ? 'now' : 'recoverable';
        scheduler.add('g', 1_000_100 - offset, 't', offset, { kind: 'retryDue' }, durability);
      }
      await store.committed();
      expect(store.countSchedule('g')).toBe(7);
      await timers.advanceBy(100, settle);
      expect(fired.map((f) => f.offset)).toEqual(Array.from({ length: 20 }, (_, i) => 19 - i));
      expect(store.countSchedule('g')).toBe(0);
    });

    it('keeps them again when the handler throws, and hands them over at the next pass', async () => {
      scheduler.stop();
      const errors: unknown[] = [];
      const passes: number[] = [];
      scheduler = new Scheduler({ store, clock, timers, onError: (error) => errors.push(error) });
      scheduler.start((group, due) => {
        passes.push(due.length);
        if (passes.length === 1) throw new Error('handler failed');
        return onDue(group, due);
      });
      for (const offset of [1, 2])
        scheduler.add('g', 1_000_010, 't', offset, { kind: 'retryDue' }, 'recoverable');
      await timers.advanceBy(10, settle);
      expect(errors).toHaveLength(1);
      expect(passes).toEqual([2, 2]);
      expect(fired.map((f) => f.offset)).toEqual([1, 2]);
    });

    it('holds them while their group has no room, until resumed', async () => {
      capacity = 1;
      for (const offset of [1, 2, 3])
        scheduler.add('g', 1_000_010, 't', offset, { kind: 'retryDue' }, 'recoverable');
      await timers.advanceBy(10, settle);
      expect(fired.map((f) => f.offset)).toEqual([1]);
      expect(scheduler.pausedGroups).toBe(1);
      capacity = 5;
      scheduler.resume('g');
      await timers.advanceBy(0, settle);
      expect(fired.map((f) => f.offset)).toEqual([1, 2, 3]);
      expect(store.listScheduleGroups()).toEqual([]);
    });
  });
});
