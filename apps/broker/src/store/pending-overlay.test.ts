import { describe, expect, it } from 'vitest';
import { PendingOverlay } from './pending-overlay.js';

function deferred() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('PendingOverlay', () => {
  it('serves pending writes until their commit, then forgets every write of that commit', async () => {
    const overlay = new PendingOverlay<string>();
    const commit = deferred();
    overlay.track('a', 'one', commit.promise);
    overlay.track('b', undefined, commit.promise);
    expect(overlay.read('a')).toEqual({ hit: true, value: 'one' });
    expect(overlay.read('b')).toEqual({ hit: true, value: undefined });
    expect(overlay.read('c')).toEqual({ hit: false });
    commit.resolve();
    await commit.promise;
    expect(overlay.read('a')).toEqual({ hit: false });
    expect(overlay.size).toBe(0);
  });

  it('keeps a newer write when an older commit of the same key settles', async () => {
    const overlay = new PendingOverlay<string>();
    const older = deferred();
    const newer = deferred();
    overlay.track('a', 'old', older.promise);
    overlay.track('a', 'new', newer.promise);
    older.resolve();
    await older.promise;
    expect(overlay.read('a')).toEqual({ hit: true, value: 'new' });
    newer.resolve();
    await newer.promise;
    expect(overlay.read('a')).toEqual({ hit: false });
  });
});
