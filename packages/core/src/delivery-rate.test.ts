import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { DeliveryRateBucket, deliveryBurst } from './delivery-rate.js';

describe('DeliveryRateBucket (X5)', () => {
  it('starts full with a tenth of a second of deliveries, and lets no more go at once', () => {
    const clock = new ManualClock(1_000);
    const bucket = new DeliveryRateBucket(200, clock);
    expect(bucket.burst).toBe(20);
    expect(bucket.available(1_000)).toBe(20);
    expect(bucket.available(5)).toBe(5);
    bucket.spend(20);
    expect(bucket.available(1_000)).toBe(0);
  });

  it('refills at its rate, and says when the next delivery may go', () => {
    const clock = new ManualClock(0);
    const bucket = new DeliveryRateBucket(200, clock);
    bucket.spend(bucket.available(100));
    // One token every 5 ms.
    expect(bucket.nextTokenAtMs()).toBe(5);
    clock.advanceBy(4);
    expect(bucket.available(10)).toBe(0);
    expect(bucket.nextTokenAtMs()).toBe(5);
    clock.advanceBy(1);
    expect(bucket.available(10)).toBe(1);
    clock.advanceBy(1_000);
    // Never more than the burst, however long it waited.
    expect(bucket.available(1_000)).toBe(20);
  });

  it('a rate under one per second still lets one go, then waits whole seconds', () => {
    const clock = new ManualClock(0);
    const bucket = new DeliveryRateBucket(0.5, clock);
    expect(deliveryBurst(0.5)).toBe(1);
    bucket.spend(bucket.available(10));
    expect(bucket.nextTokenAtMs()).toBe(2_000);
  });

  it('rejects a rate that is not a number > 0', () => {
    const clock = new ManualClock(0);
    for (const perSecond of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => new DeliveryRateBucket(perSecond, clock)).toThrow(RangeError);
  });

  it('never lets more go in a window than the burst plus the rate times its length', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5_000 }),
        fc.array(
          fc.record({ waitMs: fc.integer({ min: 0, max: 50 }), wanted: fc.integer({ min: 0, max: 500 }) }),
          {
            maxLength: 300,
          },
        ),
        (perSecond, steps) => {
          const clock = new ManualClock(0);
          const bucket = new DeliveryRateBucket(perSecond, clock);
          const sent: { atMs: number; count: number }[] = [];
          for (const { waitMs, wanted } of steps) {
            clock.advanceBy(waitMs);
            const count = bucket.available(wanted);
            bucket.spend(count);
            sent.push({ atMs: clock.now(), count });
          }
          // Every window [from, to] between two steps.
          for (let i = 0; i < sent.length; i++) {
            let total = 0;
            for (let j = i; j < sent.length; j++) {
              total += sent[j]?.count ?? 0;
              const elapsedMs = (sent[j]?.atMs ?? 0) - (sent[i]?.atMs ?? 0);
              expect(total).toBeLessThanOrEqual(bucket.burst + (perSecond * elapsedMs) / 1_000 + 1e-9);
            }
          }
        },
      ),
    );
  });

  it('keeps a steady demand at its rate', () => {
    const clock = new ManualClock(0);
    const bucket = new DeliveryRateBucket(500, clock);
    let total = 0;
    for (let ms = 0; ms < 10_000; ms++) {
      clock.advanceBy(1);
      const count = bucket.available(1_000);
      bucket.spend(count);
      total += count;
    }
    // 10 s at 500/s, plus the first burst (less one token of rounding, at most).
    expect(total).toBeGreaterThanOrEqual(5_000 + 50 - 1);
    expect(total).toBeLessThanOrEqual(5_000 + 50);
  });
});
