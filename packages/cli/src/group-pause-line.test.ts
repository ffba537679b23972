import { describe, expect, it } from 'vitest';
import { describePause } from './commands/groups.js';

describe('a group pause line', () => {
  it('says why a group holds: its open breaker with the next probe, a manual pause, or both', () => {
    const nextProbeAt = Date.UTC(2026, 10, 27, 19, 40, 5);
    expect(describePause({ state: 'open', manuallyPaused: false, failureRatio: 0.95, nextProbeAt })).toBe(
      'held (failures) · breaker open · failure ratio 95% · next probe 2026-11-27T19:40:05.000Z',
    );
    expect(describePause({ state: 'halfOpen', manuallyPaused: true, failureRatio: 1 })).toBe(
      'held (by hand, failures) · breaker halfOpen · failure ratio 100%',
    );
    expect(describePause({ state: 'closed', manuallyPaused: false, failureRatio: 0.125 })).toBe(
      'delivering · breaker closed · failure ratio 13%',
    );
  });
});
