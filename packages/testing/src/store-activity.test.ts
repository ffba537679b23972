import type { BrokerStore } from '@ricochet/broker';
import { describe, expect, it } from 'vitest';
import { StoreActivity } from './store-activity.js';

/** The part of a store these tests call; the rest is never touched. */
function fakeStore(commit: Promise<void>) {
  return {
    lastOffset: () => 7,
    putTopic: () => commit,
    putGroup: () => commit,
  } as unknown as BrokerStore;
}

describe('StoreActivity', () => {
  it('counts the promises the store hands out until they settle, one per commit', async () => {
    let commit: () => void = () => {};
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const activity = new StoreActivity();
    const store = activity.wrap(fakeStore(committed));
    expect(store.lastOffset('orders')).toBe(7);
    expect(activity.started).toBe(0);
    const first = store.putTopic({ name: 'orders', config: { type: 'normal' }, createdAt: 0 });
    const second = store.putGroup({} as never);
    // Both writes share the commit: the caller sees one promise for it, as the store hands out.
    expect(second).toBe(first);
    expect(activity.pending).toBe(1);
    const idle = activity.whenIdle();
    commit();
    await idle;
    expect(activity.pending).toBe(0);
    expect(activity.started).toBe(1);
  });

  it('hands a rejection on to the caller', async () => {
    const failure = new Error('disk full');
    const activity = new StoreActivity();
    const store = activity.wrap(fakeStore(Promise.reject(failure)));
    await expect(store.putTopic({} as never)).rejects.toBe(failure);
    expect(activity.pending).toBe(0);
  });
});
