import { describe, expect, it } from 'vitest';
import type { ScheduleKey } from '../../store/records.js';
import { type PendingWrite, ScheduleOverlay } from './schedule-overlay.js';

const key = (dueAtMs: number, offset: number, topic = 't'): ScheduleKey => ['g', dueAtMs, topic, offset];
const put = (k: ScheduleKey): PendingWrite => ({ key: k, entry: { kind: 'retryDue' } });
const removal = (k: ScheduleKey): PendingWrite => ({ key: k, entry: undefined });

describe('ScheduleOverlay', () => {
  it('keeps one write per key: due time, topic and offset together', () => {
    const overlay = new ScheduleOverlay();
    const a = put(key(100, 1));
    overlay.set(a);
    overlay.set(put(key(100, 1, 'u')));
    overlay.set(put(key(100, 2)));
    // The same message, another due time: a lease's entry beside the removal of the one before it.
    const old = removal(key(50, 1));
    overlay.set(old);
    expect(overlay.size).toBe(4);
    expect(overlay.get(key(100, 1))).toBe(a);
    expect(overlay.get([...key(50, 1)] as ScheduleKey)).toBe(old);
    expect(overlay.has(key(75, 1))).toBe(false);
    // A later write to a key replaces the one pending for it.
    const replacing = removal(key(100, 1));
    overlay.set(replacing);
    expect(overlay.size).toBe(4);
    expect(overlay.get(key(100, 1))).toBe(replacing);
    expect([...overlay.values()]).toHaveLength(4);
  });

  it('deletes by key, or only the very write it is given (a commit must not forget a newer write)', () => {
    const overlay = new ScheduleOverlay();
    const first = put(key(100, 1));
    const second = put(key(200, 1));
    overlay.set(first);
    overlay.set(second);
    const newer = removal(key(100, 1));
    overlay.set(newer);
    expect(overlay.delete(key(100, 1), first)).toBe(false);
    expect(overlay.get(key(100, 1))).toBe(newer);
    expect(overlay.delete(key(100, 1), newer)).toBe(true);
    expect(overlay.delete(key(100, 1))).toBe(false);
    expect(overlay.get(key(200, 1))).toBe(second);
    expect(overlay.delete(key(200, 1))).toBe(true);
    expect(overlay.size).toBe(0);
    expect([...overlay.values()]).toEqual([]);
  });
});
