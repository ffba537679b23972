import { describe, expect, it } from 'vitest';
import { BrokerMetrics } from '../broker-metrics.js';
import { StoreWatermarks } from './store-watermarks.js';

function watermarks(levels: { free: number | undefined; stored: number }, notices: string[]) {
  return new StoreWatermarks({
    limits: { minFreeDiskBytes: 100, maxStoreBytes: 1_000 },
    // Checks are driven by the test.
    timers: { setTimer: () => ({ cancel: () => {} }) },
    metrics: new BrokerMetrics({ groupGauges: () => [] }),
    intervalMs: 1_000,
    freeDiskBytes: async () => levels.free,
    storedBytes: () => levels.stored,
    onChange: (refused, reason) => notices.push(`${refused ? 'refused' : 'accepted'}: ${reason}`),
    onError: (error) => {
      throw error;
    },
  });
}

describe('StoreWatermarks', () => {
  it('refuses with 530 beyond either limit, accepts again within both, and reports each change once', async () => {
    const levels = { free: 10_000 as number | undefined, stored: 10 };
    const notices: string[] = [];
    const subject = watermarks(levels, notices);
    await subject.check();
    expect(subject.refusal()).toBeUndefined();

    levels.stored = 1_001;
    await subject.check();
    await subject.check();
    expect(subject.refusal()).toMatchObject({ code: 530, details: { watermark: 'maxStoreBytes' } });

    // Low disk wins the reason; still one refusal, no new notice for the same state.
    levels.free = 99;
    await subject.check();
    expect(subject.refusal()?.message).toContain('--min-free-disk-bytes');

    levels.free = undefined;
    levels.stored = 1_000;
    await subject.check();
    expect(subject.refusal()).toBeUndefined();
    expect(notices).toHaveLength(2);
    expect(notices[0]).toMatch(/^refused: .*--max-store-bytes/);
    expect(notices[1]).toMatch(/^accepted: /);
  });
});
