import { describe, expect, it } from 'vitest';
import { StatusFeed } from './connection-status.js';

describe('StatusFeed', () => {
  it('gives every watcher the changes after it started watching, and ends after closed', async () => {
    const feed = new StatusFeed();
    feed.publish({ state: 'connecting' });
    const first = feed.watch();
    feed.publish({ state: 'connected', sessionId: 's1', endpoint: 'ws://broker' });
    const second = feed.watch();
    feed.publish({ state: 'closed' });
    feed.publish({ state: 'connecting' });
    const seen = async (iterator: AsyncIterable<unknown>) => {
      const statuses = [];
      for await (const status of iterator) statuses.push(status);
      return statuses;
    };
    expect(await seen(first)).toEqual([
      { state: 'connected', sessionId: 's1', endpoint: 'ws://broker' },
      { state: 'closed' },
    ]);
    expect(await seen(second)).toEqual([{ state: 'closed' }]);
    expect(await seen(feed.watch())).toEqual([]);
  });

  it('wakes a waiting reader, and stops delivering after return()', async () => {
    const feed = new StatusFeed();
    const iterator = feed.watch();
    const next = iterator.next();
    feed.publish({ state: 'connecting' });
    expect(await next).toEqual({ done: false, value: { state: 'connecting' } });
    const pending = iterator.next();
    await iterator.return?.();
    expect(await pending).toEqual({ done: true, value: undefined });
    feed.publish({ state: 'closed' });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('keeps at most 256 unread changes per reader, dropping the oldest', async () => {
    const feed = new StatusFeed();
    const iterator = feed.watch();
    for (let attempt = 1; attempt <= 300; attempt++)
      feed.publish({ state: 'reconnecting', attempt, delayMs: 1 });
    expect(await iterator.next()).toEqual({
      done: false,
      value: { state: 'reconnecting', attempt: 45, delayMs: 1 },
    });
    await iterator.return?.();
  });
});
