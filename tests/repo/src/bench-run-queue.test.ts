import { platform } from 'node:os';
import { describe, expect, it } from 'vitest';
import { mainThreadSchedule, parseSchedstat, shareBetween } from '../../../bench/src/run-queue.js';

/**
 * W3's run-queue row (`bench/src/run-queue.ts`): how long the server's and the client's main
 * threads were ready to run and waited for a core. Its pure parts, and one reading of this
 * process's own main thread where Linux has it.
 */

describe('parseSchedstat', () => {
  it('reads run and wait time in ns and the count of slices', () => {
    expect(parseSchedstat('2500000000 750000000 12000\n')).toEqual({
      runMs: 2_500,
      waitMs: 750,
      slices: 12_000,
    });
  });

  it('refuses what is not a schedstat line', () => {
    expect(parseSchedstat('garbage')).toBeUndefined();
    expect(parseSchedstat('1 2')).toBeUndefined();
  });
});

describe('shareBetween', () => {
  it('gives ms a second and the mean wait per slice over the window', () => {
    const before = { runMs: 1_000, waitMs: 100, slices: 1_000 };
    const after = { runMs: 1_500, waitMs: 140, slices: 3_000 };
    expect(shareBetween(before, after, 2_000)).toEqual({
      runMsPerS: 250,
      waitMsPerS: 20,
      waitUsPerSlice: 20,
    });
  });

  it('has no share when a reading is missing or the window is empty', () => {
    const reading = { runMs: 1, waitMs: 1, slices: 1 };
    expect(shareBetween(undefined, reading, 1_000)).toBeUndefined();
    expect(shareBetween(reading, undefined, 1_000)).toBeUndefined();
    expect(shareBetween(reading, reading, 0)).toBeUndefined();
    expect(shareBetween(reading, reading, 1_000)).toEqual({ runMsPerS: 0, waitMsPerS: 0, waitUsPerSlice: 0 });
  });
});

describe.runIf(platform() === 'linux')('mainThreadSchedule', () => {
  it("reads this process's main thread, whose run time grows while it works", () => {
    const before = mainThreadSchedule(process.pid);
    expect(before).toBeDefined();
    // Bounded busy work: about 20 ms of CPU, enough for the kernel's ns counter to move.
    const until = performance.now() + 20;
    let spins = 0;
    while (performance.now() < until && spins < 1e8) spins++;
    const after = mainThreadSchedule(process.pid);
    expect(after?.runMs).toBeGreaterThan(before?.runMs ?? Number.POSITIVE_INFINITY);
    expect(after?.slices).toBeGreaterThanOrEqual(before?.slices ?? Number.POSITIVE_INFINITY);
  });

  it('has no reading for a process that does not exist', () => {
    expect(mainThreadSchedule(2 ** 22 + 1)).toBeUndefined();
  });
});
