import { describe, expect, it } from 'vitest';
import type { BrokerStore } from '../broker-store.js';
import type { MessageLocation, StoredMessage } from '../records.js';
import { IdIndexRebuild } from './id-index-rebuild.js';

/** A local copy's id index that shows a put only once `commit()` is called, as LMDB does. */
function fakeMirror() {
  const committed = new Map<string, MessageLocation>();
  const queued = new Map<string, MessageLocation>();
  const mirror = {
    locateMessage: (id: string) => committed.get(id),
    putMessageLocation: async (id: string, location: MessageLocation) => {
      queued.set(id, location);
    },
  } as unknown as BrokerStore;
  return {
    mirror,
    commit() {
      for (const [id, location] of queued) committed.set(id, location);
      queued.clear();
    },
    located: (id: string) => committed.get(id),
  };
}

const message = (topic: string, offset: number, messageId: string, storedAt: number): StoredMessage => ({
  messageId,
  topic,
  offset,
  body: new Uint8Array(),
  bornAt: 0,
  storedAt,
});

describe('IdIndexRebuild', () => {
  it('asks for a commit once it holds HOLD entries, and holds none after one', () => {
    const local = fakeMirror();
    const ids = new IdIndexRebuild(local.mirror);
    for (let offset = 0; offset < IdIndexRebuild.HOLD - 1; offset++)
      ids.add(message('a', offset, `m${offset}`, 1));
    expect(ids.full).toBe(false);
    ids.add(message('a', IdIndexRebuild.HOLD, 'last', 1));
    expect(ids.full).toBe(true);
    local.commit();
    ids.committed();
    expect(ids.full).toBe(false);
  });

  it('keeps the newest message of an id across topics, whether the older was committed yet or not', () => {
    for (const commitBetween of [false, true]) {
      const local = fakeMirror();
      const ids = new IdIndexRebuild(local.mirror);
      // Topics load in name order: 'a' before 'b', whatever their age.
      ids.add(message('a', 0, 'x', 30));
      ids.add(message('a', 1, 'y', 5));
      if (commitBetween) {
        local.commit();
        ids.committed();
      }
      ids.add(message('b', 0, 'x', 10));
      ids.add(message('b', 1, 'y', 40));
      local.commit();
      expect([local.located('x'), local.located('y')]).toEqual([
        { topic: 'a', offset: 0, storedAt: 30 },
        { topic: 'b', offset: 1, storedAt: 40 },
      ]);
    }
  });

  it('within a topic, keeps the later offset (the later send), whatever its storedAt', () => {
    const local = fakeMirror();
    const ids = new IdIndexRebuild(local.mirror);
    ids.add(message('a', 0, 'x', 50));
    // A broker whose clock was behind took the store over and stored it again.
    ids.add(message('a', 7, 'x', 20));
    local.commit();
    expect(local.located('x')).toEqual({ topic: 'a', offset: 7, storedAt: 20 });
  });

  it('never indexes a DLQ copy, which keeps its original id', () => {
    const local = fakeMirror();
    const ids = new IdIndexRebuild(local.mirror);
    ids.add({
      ...message('%DLQ%g', 0, 'x', 90),
      deadLetter: {
        group: 'g',
        originTopic: 'a',
        originOffset: 0,
        attempts: 3,
        reason: 'maxRetries',
        deadLetteredAt: 90,
        lastLease: 3,
      },
    });
    ids.add(message('a', 0, 'x', 10));
    local.commit();
    expect(local.located('x')).toEqual({ topic: 'a', offset: 0, storedAt: 10 });
  });
});
