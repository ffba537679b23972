import { describe, expect, it } from 'vitest';
import { CounterHistory, formatRate, HISTORY_MS } from './rates';

describe('CounterHistory', () => {
  it('turns consecutive readings into per-second rates', () => {
    const history = new CounterHistory<'sent'>();
    expect(history.current('sent')).toBeUndefined();
    history.add({ atMs: 0, totals: { sent: 0 } });
    history.add({ atMs: 2_000, totals: { sent: 10 } });
    history.add({ atMs: 4_000, totals: { sent: 14 } });
    expect(history.series('sent')).toEqual([
      { atMs: 2_000, perSecond: 5 },
      { atMs: 4_000, perSecond: 2 },
    ]);
    expect(history.current('sent')).toBe(2);
  });

  it('skips an interval where a counter went down (the broker restarted)', () => {
    const history = new CounterHistory<'acked'>();
    history.add({ atMs: 0, totals: { acked: 100 } });
    history.add({ atMs: 1_000, totals: { acked: 3 } });
    history.add({ atMs: 2_000, totals: { acked: 5 } });
    expect(history.series('acked')).toEqual([{ atMs: 2_000, perSecond: 2 }]);
  });

  it('keeps 15 minutes of readings and ignores one that is not newer', () => {
    const history = new CounterHistory<'sent'>();
    for (let i = 0; i <= 1_000; i++) history.add({ atMs: i * 2_000, totals: { sent: i } });
    history.add({ atMs: 1_000, totals: { sent: 0 } });
    const series = history.series('sent');
    const span = (series.at(-1)?.atMs ?? 0) - (series[0]?.atMs ?? 0);
    expect(span).toBeLessThanOrEqual(HISTORY_MS);
    expect(span).toBeGreaterThan(HISTORY_MS - 4_000);
    expect(series.every((point) => point.perSecond === 0.5)).toBe(true);
  });
});

describe('formatRate', () => {
  it.each([
    [undefined, '–'],
    [0, '0'],
    [0.25, '0.3'],
    [12.4, '12'],
    [1_530, '1.5k'],
  ])('%s → %s', (rate, text) => expect(formatRate(rate)).toBe(text));
});
