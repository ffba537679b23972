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

  it('reads the levels again for a call made while a check is under way, and never lets an older reading win', async () => {
    const notices: string[] = [];
    const reads: Array<(bytes: number) => void> = [];
    const subject = new StoreWatermarks({
      limits: { minFreeDiskBytes: 0, maxStoreBytes: 1_000 },
      timers: { setTimer: () => ({ cancel: () => {} }) },
      metrics: new BrokerMetrics({ groupGauges: () => [] }),
      intervalMs: 1_000,
      freeDiskBytes: async () => undefined,
      // Each read waits for the test to say what the store holds at that moment.
      storedBytes: () => new Promise<number>((resolve) => reads.push(resolve)),
      onChange: (refused) => notices.push(refused ? 'refused' : 'accepted'),
      onError: (error) => {
        throw error;
      },
    });
    const until = async (count: number) => {
      for (let turn = 0; turn < 100 && reads.length < count; turn++) await Promise.resolve();
      expect(reads).toHaveLength(count);
    };

    // A check (the periodic one, say) reads the store while it is over its limit...
    const underWay = subject.check();
    await until(1);
    // ...then retention frees space and the caller asks twice: both share one check after it.
    const first = subject.check();
    const second = subject.check();
    reads[0]?.(2_000);
    await underWay;
    expect(subject.refusal()).toMatchObject({ code: 530 });
    await until(2);
    reads[1]?.(10);
    await Promise.all([first, second]);
    expect(subject.refusal()).toBeUndefined();
    expect(reads).toHaveLength(2);
    expect(notices).toEqual(['refused', 'accepted']);

    // Once that check has started reading, a new call gets a check of its own.
    const third = subject.check();
    await until(3);
    reads[2]?.(10);
    await third;
  });
});
