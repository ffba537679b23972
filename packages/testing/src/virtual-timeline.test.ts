import { setImmediate } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { VirtualTimeline } from './virtual-timeline.js';

describe('VirtualTimeline', () => {
  it('fires due timers in time order, ties in arming order, each with the clock at its time', () => {
    const timeline = new VirtualTimeline(1_000);
    const fired: [string, number][] = [];
    const record = (name: string) => () => fired.push([name, timeline.now()]);
    timeline.setTimer(300, record('c'), 'broker');
    timeline.setTimer(100, record('a'), 'broker');
    timeline.setTimer(100, record('b'), 'client');
    timeline.setTimer(500, record('late'), 'broker');
    const next = timeline.next();
    expect(next?.dueAtMs).toBe(1_100);
    timeline.moveTo(1_100);
    expect(timeline.fireDue()).toEqual({ count: 2, anyClient: true, allHousekeeping: false });
    timeline.moveTo(1_300);
    timeline.fireDue();
    expect(fired).toEqual([
      ['a', 1_100],
      ['b', 1_100],
      ['c', 1_300],
    ]);
    expect(timeline.pendingCount).toBe(1);
  });

  it('fires a timer armed for now on the next turn by itself, and never a cancelled one', async () => {
    const timeline = new VirtualTimeline(0);
    const fired: string[] = [];
    timeline.setTimer(0, () => fired.push('now'), 'broker');
    timeline.setTimer(-5, () => fired.push('past'), 'broker');
    timeline.setTimer(0, () => fired.push('cancelled'), 'broker').cancel();
    timeline.setTimer(1, () => fired.push('later'), 'broker');
    expect(timeline.hasDueNow).toBe(true);
    await setImmediate();
    expect(fired).toEqual(['now', 'past']);
    expect(timeline.hasDueNow).toBe(false);
  });

  it('fires in one call the timers a callback arms for the same instant', () => {
    const timeline = new VirtualTimeline(0);
    const fired: number[] = [];
    timeline.setTimer(10, () => timeline.setTimer(0, () => fired.push(timeline.now()), 'broker'), 'broker');
    timeline.moveTo(10);
    expect(timeline.fireDue().count).toBe(2);
    expect(fired).toEqual([10]);
  });

  it('keeps what a callback throws for takeErrors, and fires the rest', () => {
    const timeline = new VirtualTimeline(0);
    const boom = new Error('boom');
    const fired: string[] = [];
    timeline.setTimer(
      1,
      () => {
        throw boom;
      },
      'broker',
    );
    timeline.setTimer(1, () => fired.push('after'), 'broker');
    timeline.moveTo(1);
    timeline.fireDue();
    expect(fired).toEqual(['after']);
    expect(timeline.takeErrors()).toEqual([boom]);
    expect(timeline.takeErrors()).toEqual([]);
  });

  it('marks timers as housekeeping from an arming order on', () => {
    const timeline = new VirtualTimeline(0);
    timeline.setTimer(5, () => {}, 'broker');
    const from = timeline.nextOrder;
    timeline.setTimer(1, () => {}, 'broker');
    timeline.markHousekeepingFrom(from);
    expect(timeline.next()?.housekeeping).toBe(true);
    expect(timeline.next((timer) => !timer.housekeeping)?.dueAtMs).toBe(5);
  });

  it('counts every arming, firing, cancelling and move as a change', () => {
    const timeline = new VirtualTimeline(0);
    const handle = timeline.setTimer(5, () => {}, 'broker');
    handle.cancel();
    handle.cancel();
    timeline.moveTo(0);
    timeline.moveTo(3);
    expect(timeline.changes).toBe(3);
  });

  it('never runs backwards', () => {
    const timeline = new VirtualTimeline(100);
    expect(() => timeline.moveTo(99)).toThrow(RangeError);
    expect(() => new VirtualTimeline(Number.NaN)).toThrow(RangeError);
  });
});
