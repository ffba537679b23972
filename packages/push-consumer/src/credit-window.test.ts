import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CreditWindow } from './credit-window.js';

describe('CreditWindow', () => {
  it('opens at its floor, at most max', () => {
    expect(new CreditWindow({ floor: 40, max: 1_024 }).open()).toBe(40);
    expect(new CreditWindow({ floor: 40, max: 5 }).open()).toBe(5);
  });

  it('doubles when the listeners run dry after a deliver used up the credit, up to max', () => {
    const window = new CreditWindow({ floor: 4, max: 20 });
    window.open();
    window.delivered(4);
    // The broker had 4 credits and sent 4: it may have more, and the listeners wait. The 4 more
    // are granted at once, without waiting for results.
    expect(window.starved()).toBe(4);
    expect(window.size).toBe(8);
    // Once per deliver: starving again before the next one grants nothing more.
    expect(window.starved()).toBe(0);
    window.delivered(4);
    expect(window.starved()).toBe(8);
    expect(window.size).toBe(16);
    window.delivered(8);
    expect(window.starved()).toBe(4);
    expect(window.size).toBe(20);
    window.delivered(4);
    expect(window.starved()).toBe(0);
  });

  it('resized smaller, grants nothing until what is out came down to the new max, then keeps to it', () => {
    const window = new CreditWindow({ floor: 8, max: 8 });
    window.open();
    window.delivered(8);
    window.resize(3);
    expect(window.size).toBe(3);
    // 8 out; results of 5 bring them to 3: no credit for those.
    expect(window.settled(5, 0)).toBe(0);
    // From there each result gives its credit back: never more than 3 out.
    expect(window.settled(1, 0)).toBe(1);
    // Larger again: back to its floor (8 asked, no more than the new max), granted with the next result.
    window.resize(6);
    expect(window.size).toBe(6);
    expect(window.settled(1, 0)).toBe(4);
  });

  it('does not grow when the last deliver left credit over: the broker had no more messages', () => {
    const window = new CreditWindow({ floor: 4, max: 64 });
    window.open();
    window.delivered(3);
    expect(window.starved()).toBe(0);
    expect(window.size).toBe(4);
  });

  it('counts credit granted since the previous deliver as not yet seen by the broker', () => {
    const window = new CreditWindow({ floor: 4, max: 64 });
    window.open();
    window.delivered(2);
    expect(window.settled(2, 0)).toBe(2);
    // 4 delivered of the 4 granted before the previous deliver; the 2 granted since may still be
    // on their way to the broker, so this deliver found it out of credit.
    window.delivered(2);
    expect(window.starved()).toBe(4);
  });

  it('gives back one credit per result while the window holds its size', () => {
    const window = new CreditWindow({ floor: 8, max: 64 });
    window.open();
    window.delivered(8);
    expect(window.settled(3, 0)).toBe(3);
    expect(window.settled(5, 0)).toBe(5);
    expect(window.size).toBe(8);
  });

  it('shrinks by half the messages that sat in the cache for a whole epoch, down to its floor', () => {
    const window = new CreditWindow({ floor: 2, max: 64 });
    window.open();
    window.delivered(2);
    for (const size of [4, 8, 16]) {
      window.starved();
      window.delivered(size / 2);
    }
    window.starved();
    expect(window.size).toBe(32);
    // An epoch is one window's worth of results. In the first one the cache ran dry: no change.
    expect(window.settled(32, 40)).toBe(32);
    expect(window.size).toBe(32);
    // The next 32 results never left fewer than 10 waiting: 5 fewer.
    const granted: number[] = [];
    for (let i = 0; i < 4; i++) granted.push(window.settled(8, 10 + i));
    expect(window.size).toBe(27);
    expect(granted).toEqual([8, 8, 8, 3]);
    // The next epoch (27 results) never had fewer than 30 waiting: 15 fewer, then the floor.
    window.settled(27, 30);
    expect(window.size).toBe(12);
    window.settled(12, 50);
    expect(window.size).toBe(2);
  });

  it('does not shrink after an epoch in which the cache ran dry', () => {
    const window = new CreditWindow({ floor: 4, max: 64 });
    window.open();
    window.settled(2, 10);
    window.starved();
    window.settled(2, 10);
    expect(window.size).toBe(4);
  });

  it('opens the next subscription at the size it learnt, with a fresh count', () => {
    const window = new CreditWindow({ floor: 4, max: 64 });
    window.open();
    window.delivered(4);
    window.starved();
    expect(window.open()).toBe(8);
    window.delivered(7);
    expect(window.starved()).toBe(0);
    expect(window.settled(7, 0)).toBe(7);
  });

  it('never lets more than max deliveries out, and grants 1 to max credits at a time', () => {
    const event = fc.oneof(
      fc.record({ type: fc.constant('deliver' as const), share: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ type: fc.constant('settle' as const), share: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ type: fc.constant('starve' as const) }),
      fc.record({ type: fc.constant('reopen' as const) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 300 }),
        fc.array(event, { maxLength: 200 }),
        fc.nat(50),
        (floor, max, events, waiting) => {
          const window = new CreditWindow({ floor, max });
          // A broker's view: the credit it holds, and the deliveries the consumer holds.
          let brokerCredit = window.open();
          let held = 0;
          const grant = (credits: number) => {
            if (credits === 0) return;
            expect(credits).toBeGreaterThanOrEqual(1);
            expect(credits).toBeLessThanOrEqual(max);
            brokerCredit += credits;
          };
          for (const step of events) {
            if (step.type === 'deliver') {
              const count = Math.ceil(step.share * brokerCredit);
              if (count === 0) continue;
              brokerCredit -= count;
              held += count;
              window.delivered(count);
            } else if (step.type === 'settle') {
              const count = Math.ceil(step.share * held);
              if (count === 0) continue;
              held -= count;
              grant(window.settled(count, waiting));
            } else if (step.type === 'starve') {
              grant(window.starved());
            } else {
              brokerCredit = window.open();
              held = 0;
            }
            expect(held + brokerCredit).toBeLessThanOrEqual(max);
            expect(window.size).toBeGreaterThanOrEqual(Math.min(floor, max));
            expect(window.size).toBeLessThanOrEqual(max);
          }
        },
      ),
    );
  });
});
