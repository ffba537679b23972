import { expect } from 'vitest';
import { storeQueues } from './test-store.js';

/*
 * With one queue, a topic is one log: its offsets count up from 0, and consumers get its messages
 * in the order they were sent. With queues (`--store-queues`, DESIGN.md §9), each queue is a log of
 * its own: an offset is its queue's number for the message, interleaved (`offset × queues + queue`),
 * and only the messages of one queue (of one message group, for FIFO) keep their order. These
 * assertions hold each run to what its mode promises.
 */

/**
 * `offsets` are those of new messages of a topic that held `before` messages: `before`,
 * `before + 1`, … with one queue; with queues, distinct offsets, none of them among `earlier`
 * (offsets the topic gave before).
 */
export function expectNewOffsets(
  offsets: readonly number[],
  before = 0,
  earlier: readonly number[] = [],
): void {
  if (storeQueues() === 1) {
    expect(offsets).toEqual(offsets.map((_, index) => before + index));
    return;
  }
  expect(new Set([...offsets, ...earlier]).size).toBe(offsets.length + earlier.length);
  for (const offset of offsets) expect(Number.isSafeInteger(offset) && offset >= 0).toBe(true);
}

/** A topic's stats, as `GET /v1/topics/:topic` answers. */
interface TopicStats {
  readonly firstOffset: number;
  readonly nextOffset: number;
  readonly messages: number;
}

/**
 * `actual` is `expected`. With queues, `firstOffset` is the sum of every queue's, how many messages
 * lie below each queue's first retained one: which those are depends on how the messages spread,
 * so only its bound is checked (no more than were deleted).
 */
export function expectTopicStats(actual: TopicStats, expected: TopicStats): void {
  if (storeQueues() === 1) {
    expect(actual).toEqual(expected);
    return;
  }
  expect(actual).toEqual({ ...expected, firstOffset: actual.firstOffset });
  expect(actual.firstOffset).toBeLessThanOrEqual(expected.nextOffset - expected.messages);
}

/** `actual` is `expected` in log order with one queue; with queues, the same items in any order. */
export function expectInLogOrder<T>(actual: readonly T[], expected: readonly T[]): void {
  if (storeQueues() === 1) expect(actual).toEqual(expected);
  else expect([...actual].sort()).toEqual([...expected].sort());
}
