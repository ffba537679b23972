import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReadyQueue, type ReadyRef } from './ready-queue.js';

const ref = (topic: string, offset: number, messageGroup?: string): ReadyRef =>
  messageGroup === undefined ? { topic, offset } : { topic, offset, messageGroup };

const all = () => true;
/** Most tests here are about one line: the `again` one. */
const again = (topic: string, offset: number, messageGroup?: string): [ReadyRef, 'again'] => [
  ref(topic, offset, messageGroup),
  'again',
];
const offsets = (refs: readonly ReadyRef[]) => refs.map((r) => r.offset);

describe('ReadyQueue', () => {
  it('hands entries out oldest first, at most `max` at a time', () => {
    const queue = new ReadyQueue();
    for (const offset of [5, 1, 9, 3]) queue.push(...again('t', offset));
    expect(queue.size).toBe(4);
    expect(offsets(queue.take(3, all))).toEqual([5, 1, 9]);
    expect(queue.size).toBe(1);
    expect(offsets(queue.take(3, all))).toEqual([3]);
    expect(queue.size).toBe(0);
    expect(queue.take(3, all)).toEqual([]);
  });

  it('hands out messages Ready again (retries, releases) before those never delivered, whatever came first', () => {
    const queue = new ReadyQueue();
    queue.push(ref('t', 1), 'first');
    queue.push(ref('t', 2), 'first');
    queue.push(ref('t', 3), 'again');
    queue.push(ref('t', 4), 'first');
    queue.push(ref('t', 5), 'again');
    expect(queue.size).toBe(5);
    expect(queue.againSize).toBe(2);
    expect(offsets([...queue])).toEqual([3, 5, 1, 2, 4]);
    expect(offsets(queue.take(3, all))).toEqual([3, 5, 1]);
    queue.push(ref('t', 6), 'again');
    expect(offsets(queue.take(3, all))).toEqual([6, 2, 4]);
    expect(queue.size).toBe(0);
  });

  it("ends a take at a 'stop' in the again line, before the first line is looked at", () => {
    const queue = new ReadyQueue();
    queue.push(ref('t', 1), 'again');
    queue.push(ref('t', 2), 'again');
    queue.push(ref('t', 3), 'first');
    const seen: number[] = [];
    const taken = queue.take(10, (r) => {
      seen.push(r.offset);
      return r.offset === 2 ? 'stop' : true;
    });
    expect(offsets(taken)).toEqual([1]);
    expect(seen).toEqual([1, 2]);
    expect(offsets([...queue])).toEqual([2, 3]);
  });

  it('takes nothing for max 0 and leaves every entry', () => {
    const queue = new ReadyQueue();
    queue.push(...again('t', 1));
    expect(queue.take(0, all)).toEqual([]);
    expect(queue.size).toBe(1);
  });

  it('skips entries the consumer does not accept and keeps them in order for the next one', () => {
    const queue = new ReadyQueue();
    queue.push(...again('a', 1));
    queue.push(...again('b', 2));
    queue.push(...again('a', 3));
    queue.push(...again('b', 4));
    queue.push(...again('a', 5));
    const onlyB = (r: ReadyRef) => r.topic === 'b';
    expect(offsets(queue.take(10, onlyB))).toEqual([2, 4]);
    expect(queue.size).toBe(3);
    expect(queue.take(10, onlyB)).toEqual([]);
    queue.push(...again('b', 6));
    expect(offsets(queue.take(10, all))).toEqual([1, 3, 5, 6]);
  });

  it('stops at `max` accepted entries without consuming the skipped ones after them', () => {
    const queue = new ReadyQueue();
    for (let offset = 0; offset < 6; offset++)
      queue.push(...again(offset % 2 === 0 ? 'even' : 'odd', offset));
    expect(offsets(queue.take(2, (r) => r.topic === 'odd'))).toEqual([1, 3]);
    expect(offsets(queue.take(10, all))).toEqual([0, 2, 4, 5]);
  });

  it('passes each entry with its message group to the filter, untouched', () => {
    const queue = new ReadyQueue();
    queue.push(...again('t', 1, 'order-1'));
    queue.push(...again('t', 2));
    const seen: ReadyRef[] = [];
    const taken = queue.take(5, (r) => {
      seen.push(r);
      return r.messageGroup === undefined;
    });
    expect(taken).toEqual([{ topic: 't', offset: 2 }]);
    expect(seen).toEqual([
      { topic: 't', offset: 1, messageGroup: 'order-1' },
      { topic: 't', offset: 2 },
    ]);
    expect(queue.take(5, all)).toEqual([{ topic: 't', offset: 1, messageGroup: 'order-1' }]);
  });

  it('keeps order and size across the compaction of a long dead prefix', () => {
    const queue = new ReadyQueue();
    // A long-lived entry near the front that nobody accepts, so the head stops there for a while.
    queue.push(...again('stuck', -1));
    for (let offset = 0; offset < 5_000; offset++) queue.push(...again('t', offset));
    const notStuck = (r: ReadyRef) => r.topic !== 'stuck';
    let next = 0;
    while (next < 4_000) {
      const taken = queue.take(100, notStuck);
      expect(offsets(taken)).toEqual(Array.from({ length: 100 }, (_, i) => next + i));
      next += 100;
    }
    expect(queue.size).toBe(1_001);
    // Now the stuck one goes: the head passes 4 000 dead slots, which compaction reclaims.
    expect(offsets(queue.take(1, (r) => r.topic === 'stuck'))).toEqual([-1]);
    for (let offset = 5_000; offset < 5_010; offset++) queue.push(...again('t', offset));
    const rest = queue.take(Number.POSITIVE_INFINITY, all);
    expect(offsets(rest)).toEqual(Array.from({ length: 1_010 }, (_, i) => 4_000 + i));
    expect(queue.size).toBe(0);
  });

  it('behaves as a filtered FIFO list under any mix of pushes and takes', () => {
    const operation = fc.oneof(
      fc.record({
        push: fc.constant(true as const),
        topic: fc.constantFrom('a', 'b', 'c'),
        lane: fc.constantFrom('again' as const, 'first' as const),
        count: fc.nat(300),
      }),
      fc.record({
        push: fc.constant(false as const),
        topics: fc.subarray(['a', 'b', 'c']),
        max: fc.nat(400),
      }),
    );
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 60 }), (operations) => {
        const queue = new ReadyQueue();
        // The model: two plain lists, the `again` one read before the `first` one.
        let model = { again: [] as ReadyRef[], first: [] as ReadyRef[] };
        const inOrder = () => [...model.again, ...model.first];
        let nextOffset = 0;
        for (const op of operations) {
          if (op.push) {
            for (let i = 0; i < op.count; i++) {
              const r = ref(op.topic, nextOffset++);
              queue.push(r, op.lane);
              model[op.lane].push(r);
            }
            continue;
          }
          const accept = (r: ReadyRef) => op.topics.includes(r.topic);
          const expected = inOrder().filter(accept).slice(0, op.max);
          expect(queue.take(op.max, accept)).toEqual(expected);
          const left = (line: ReadyRef[]) => line.filter((r) => !expected.includes(r));
          model = { again: left(model.again), first: left(model.first) };
          expect(queue.size).toBe(model.again.length + model.first.length);
          expect(queue.againSize).toBe(model.again.length);
          // Iterating lists what is left, in order, and takes nothing.
          expect([...queue]).toEqual(inOrder());
        }
        expect(queue.take(Number.POSITIVE_INFINITY, all)).toEqual(inOrder());
      }),
      { numRuns: 150 },
    );
  });
});
