import { afterEach, describe, expect, it, vi } from 'vitest';
import { FEED_APPLY_BATCHES, FEED_APPLY_DELAY_MS, FEED_APPLY_ROWS, FeedArrivals } from './feed-arrivals.js';
import type { CommittedWrites } from './write-pipeline.js';

/** A fed batch of `messages` messages (their values do not matter here). */
function batch(messages: number, history = 0): CommittedWrites {
  return {
    from: 0,
    to: 0,
    expired: [],
    messages: Array.from({ length: messages }, () => new Uint8Array(1)),
    history: Array.from({ length: history }, (_, index) => [`m${index}`, new Uint8Array(1)] as const),
  };
}

/** Arrivals whose queued applies are counted, each taking what waits when the test says. */
function counted() {
  let queued = 0;
  const arrivals = new FeedArrivals<string>({ queueApply: () => queued++ });
  const add = (fed: CommittedWrites) => arrivals.add({ batch: fed, resolve: () => {} });
  return { arrivals, add, queued: () => queued };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('FeedArrivals', () => {
  it('queues one apply for the batches of FEED_APPLY_DELAY_MS, and the next batch starts another wait', () => {
    vi.useFakeTimers();
    const { arrivals, add, queued } = counted();
    add(batch(3));
    vi.advanceTimersByTime(FEED_APPLY_DELAY_MS - 1);
    add(batch(4));
    expect(queued()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(queued()).toBe(1);
    // Arriving before the queued apply runs: it joins it, with no apply of its own.
    add(batch(1));
    vi.advanceTimersByTime(FEED_APPLY_DELAY_MS * 3);
    expect(queued()).toBe(1);
    expect(arrivals.take().map(({ batch: fed }) => fed.messages.length)).toEqual([3, 4, 1]);
    add(batch(2));
    vi.advanceTimersByTime(FEED_APPLY_DELAY_MS);
    expect(queued()).toBe(2);
  });

  it('queues the apply at once when FEED_APPLY_ROWS rows or FEED_APPLY_BATCHES batches wait', () => {
    vi.useFakeTimers();
    const rows = counted();
    rows.add(batch(FEED_APPLY_ROWS - 10));
    expect(rows.queued()).toBe(0);
    rows.add(batch(5, 5));
    expect(rows.queued()).toBe(1);
    const batches = counted();
    for (let index = 1; index < FEED_APPLY_BATCHES; index++) batches.add(batch(1));
    expect(batches.queued()).toBe(0);
    batches.add(batch(1));
    expect(batches.queued()).toBe(1);
    expect(batches.arrivals.take()).toHaveLength(FEED_APPLY_BATCHES);
  });

  it('flushes at once when asked (before a takeover), and not when nothing waits or an apply is queued', () => {
    vi.useFakeTimers();
    const { arrivals, add, queued } = counted();
    arrivals.flush();
    expect(queued()).toBe(0);
    add(batch(1));
    arrivals.flush();
    arrivals.flush();
    expect(queued()).toBe(1);
    // The timer the first batch started was cleared: it queues nothing more.
    vi.advanceTimersByTime(FEED_APPLY_DELAY_MS);
    expect(queued()).toBe(1);
    expect(arrivals.take()).toHaveLength(1);
    expect(arrivals.take()).toEqual([]);
  });
});
