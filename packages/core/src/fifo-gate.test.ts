import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FifoGate } from './fifo-gate.js';

describe('FifoGate (P5)', () => {
  it('lets the head of a message group through and holds the ones behind it', () => {
    const gate = new FifoGate();
    gate.claim('orders', 'customer-1', 4);
    expect(gate.isBlocked('orders', 'customer-1', 4)).toBe(false);
    expect(gate.isBlocked('orders', 'customer-1', 5)).toBe(true);
    // Other message groups, and the same key on another topic, keep flowing.
    expect(gate.isBlocked('orders', 'customer-2', 6)).toBe(false);
    expect(gate.isBlocked('refunds', 'customer-1', 5)).toBe(false);
  });

  it('keeps the first claim: a later claim does not replace the head', () => {
    const gate = new FifoGate();
    gate.claim('orders', 'g', 4);
    gate.claim('orders', 'g', 9);
    expect(gate.isBlocked('orders', 'g', 9)).toBe(true);
  });

  it('moves on only when the head itself is released', () => {
    const gate = new FifoGate();
    gate.claim('orders', 'g', 4);
    gate.release('orders', 'g', 5);
    expect(gate.isBlocked('orders', 'g', 5)).toBe(true);
    gate.release('orders', 'g', 4);
    expect(gate.isBlocked('orders', 'g', 5)).toBe(false);
    expect(gate.size).toBe(0);
  });

  it('never has two messages of one message group through at once', () => {
    const operation = fc.record({
      kind: fc.constantFrom('claim', 'release'),
      group: fc.constantFrom('a', 'b'),
      offset: fc.integer({ min: 0, max: 5 }),
    });
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 40 }), (operations) => {
        const gate = new FifoGate();
        const heads = new Map<string, number>();
        for (const { kind, group, offset } of operations) {
          if (kind === 'claim' && !gate.isBlocked('t', group, offset)) {
            gate.claim('t', group, offset);
            if (!heads.has(group)) heads.set(group, offset);
          }
          if (kind === 'release') {
            gate.release('t', group, offset);
            if (heads.get(group) === offset) heads.delete(group);
          }
          for (const [key, head] of heads) {
            for (let other = 0; other <= 5; other++) {
              expect(gate.isBlocked('t', key, other)).toBe(other !== head);
            }
          }
          expect(gate.size).toBe(heads.size);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('lists each held message group with its head, and forgets it once released', () => {
    const gate = new FifoGate();
    gate.claim('orders', 'customer-1', 4);
    gate.claim('orders', 'customer-1', 9);
    gate.claim('payments', 'customer-2', 7);
    expect([...gate.heads()]).toEqual([
      { topic: 'orders', messageGroup: 'customer-1', offset: 4 },
      { topic: 'payments', messageGroup: 'customer-2', offset: 7 },
    ]);
    gate.release('orders', 'customer-1', 4);
    expect([...gate.heads()]).toEqual([{ topic: 'payments', messageGroup: 'customer-2', offset: 7 }]);
  });
});
