import { describe, expect, it } from 'vitest';
import { NOT_PENDING, PendingOverlay } from './pending-overlay.js';
import type { DeliveryAddress } from './records.js';

const at = (offset: number): DeliveryAddress => ({ group: 'g', topic: 't', offset });

function deferred() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('PendingOverlay', () => {
  it('serves pending writes until their commit, then forgets every write of that commit', async () => {
    const overlay = new PendingOverlay<string>();
    const commit = deferred();
    overlay.track(at(1), 'one', commit.promise);
    overlay.track(at(2), undefined, commit.promise);
    expect(overlay.read(at(1))).toBe('one');
    expect(overlay.read(at(2))).toBeUndefined();
    expect(overlay.read(at(3))).toBe(NOT_PENDING);
    expect([at(1), at(2), at(3)].map((address) => overlay.holds(address))).toEqual([true, false, undefined]);
    commit.resolve();
    await commit.promise;
    expect(overlay.read(at(1))).toBe(NOT_PENDING);
    expect(overlay.holds(at(1))).toBeUndefined();
    expect(overlay.size).toBe(0);
  });

  it('keeps a newer write when an older commit of the same key settles', async () => {
    const overlay = new PendingOverlay<string>();
    const older = deferred();
    const newer = deferred();
    overlay.track(at(1), 'old', older.promise);
    overlay.track(at(1), 'new', newer.promise);
    older.resolve();
    await older.promise;
    expect(overlay.read(at(1))).toBe('new');
    newer.resolve();
    await newer.promise;
    expect(overlay.read(at(1))).toBe(NOT_PENDING);
  });
});
