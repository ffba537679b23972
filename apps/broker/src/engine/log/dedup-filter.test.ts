import { describe, expect, it } from 'vitest';
import { DedupFilter } from './dedup-filter.js';

const WINDOW_MS = 60_000;
const ids = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, index) => `${prefix}-${index}`);

describe('DedupFilter (R3)', () => {
  it('holds every id added within the window, across generations', () => {
    const filter = new DedupFilter({ windowMs: WINDOW_MS });
    const added = ids('sent', 600_000);
    // 600,000 ids over 40 s: several generations, grown by count and by time.
    for (const [index, id] of added.entries()) filter.add(id, Math.floor(index / 15));
    expect(added.filter((id) => !filter.mayHold(id, 40_000))).toEqual([]);
  });

  it('rules out nearly every id never added', () => {
    const filter = new DedupFilter({ windowMs: WINDOW_MS });
    for (const id of ids('sent', 300_000)) filter.add(id, 0);
    const maybes = ids('new', 100_000).filter((id) => filter.mayHold(id, 1));
    expect(maybes.length).toBeLessThan(500);
  });

  it('forgets ids once they have left the window', () => {
    const filter = new DedupFilter({ windowMs: WINDOW_MS });
    filter.add('a', 1_000);
    expect(filter.mayHold('a', 1_000 + WINDOW_MS - 1)).toBe(true);
    expect(filter.mayHold('a', 1_000 + WINDOW_MS)).toBe(false);
    expect(filter.bytes).toBe(0);
  });

  it('rules nothing out until what an earlier run stored has left the window', () => {
    const filter = new DedupFilter({ windowMs: WINDOW_MS });
    filter.blindUntil(5_000);
    expect(filter.mayHold('never-added', 5_000 + WINDOW_MS - 1)).toBe(true);
    expect(filter.mayHold('never-added', 5_000 + WINDOW_MS)).toBe(false);
  });

  it('over its memory limit drops old generations and goes blind until their ids have left the window', () => {
    const filter = new DedupFilter({ windowMs: WINDOW_MS, maxBytes: 2_000_000 });
    const early = ids('early', 300_000);
    for (const id of early) filter.add(id, 0);
    // More than the limit holds: the first generation goes, its ids still inside the window.
    for (const id of ids('late', 1_200_000)) filter.add(id, 10);
    expect(filter.bytes).toBeLessThanOrEqual(2_000_000);
    expect(early.filter((id) => !filter.mayHold(id, 20))).toEqual([]);
    expect(filter.mayHold('never-added', WINDOW_MS - 1)).toBe(true);
    expect(filter.mayHold('never-added', WINDOW_MS + 10)).toBe(false);
  });

  it('with a window of 0 holds nothing', () => {
    const filter = new DedupFilter({ windowMs: 0 });
    filter.add('a', 7);
    expect(filter.mayHold('a', 7)).toBe(false);
  });

  it('keeps the ids added after a pin, whatever the window, until it is unpinned', () => {
    const filter = new DedupFilter({ windowMs: 0 });
    const pin = filter.pin(7);
    filter.add('a', 7);
    filter.add('b', 8);
    expect([filter.mayHold('a', 9), filter.mayHold('b', 9)]).toEqual([true, true]);
    filter.unpin(pin);
    expect([filter.mayHold('a', 9), filter.mayHold('b', 9)]).toEqual([false, false]);
  });
});
