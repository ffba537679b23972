import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../store/records.js';
import { KEEP_COMMITTED_MS, RecentMessages } from './recent-messages.js';

const message = (offset: number, bodyBytes = 1): StoredMessage => ({
  messageId: `m${offset}`,
  topic: 't',
  offset,
  body: new Uint8Array(bodyBytes),
  bornAt: 0,
  storedAt: 0,
});

/** A write the test commits when it says: what the store hands back for one transaction. */
function pendingWrite() {
  let commit: () => void = () => {};
  let fail: () => void = () => {};
  const written = new Promise<void>((resolve, reject) => {
    commit = resolve;
    fail = () => reject(new Error('store failed'));
  });
  return { written, commit, fail };
}

/** A write that never commits: the count and byte bounds alone apply. */
const uncommitted = { atMs: 0, written: new Promise<void>(() => {}) };

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('RecentMessages', () => {
  it('serves the newest messages and sends older reads to the store', () => {
    const recent = new RecentMessages();
    for (let offset = 10; offset < 15; offset++) recent.append(message(offset), uncommitted);
    expect(recent.read(12, 10)?.map((m) => m.offset)).toEqual([12, 13, 14]);
    expect(recent.read(15, 10)).toEqual([]);
    expect(recent.read(9, 10)).toBeUndefined();
    expect(recent.read(16, 10)).toBeUndefined();
  });

  it('keeps at most 4096 messages and 16 MiB of bodies', () => {
    const recent = new RecentMessages();
    for (let offset = 0; offset < 5_000; offset++) recent.append(message(offset), uncommitted);
    expect(recent.read(903, 1)).toBeUndefined();
    expect(recent.read(904, 1)?.[0]?.offset).toBe(904);
    const big = new RecentMessages();
    for (let offset = 0; offset < 5; offset++) big.append(message(offset, 6 * 1024 * 1024), uncommitted);
    expect(big.read(2, 1)).toBeUndefined();
    expect(big.read(3, 5)?.map((m) => m.offset)).toEqual([3, 4]);
  });

  it('replaces a kept message by its newer version', () => {
    const recent = new RecentMessages();
    for (let offset = 0; offset < 3; offset++) recent.append(message(offset), uncommitted);
    recent.replace({ ...message(1), messageId: 'rewritten' });
    recent.replace({ ...message(7), messageId: 'not kept' });
    expect(recent.read(0, 5)?.map((m) => m.messageId)).toEqual(['m0', 'rewritten', 'm2']);
  });

  it('knows nothing before its first message', () => {
    expect(new RecentMessages().read(0, 10)).toBeUndefined();
  });

  it('starts over at a gap in offsets', () => {
    const recent = new RecentMessages();
    recent.append(message(0), uncommitted);
    recent.append(message(5), uncommitted);
    expect(recent.read(0, 1)).toBeUndefined();
    expect(recent.read(5, 1)?.[0]?.offset).toBe(5);
  });

  it('lets a committed message go once it was appended KEEP_COMMITTED_MS ago, and never before its commit', async () => {
    const recent = new RecentMessages();
    const first = pendingWrite();
    recent.append(message(0), { atMs: 0, written: first.written });
    recent.append(message(1), { atMs: 10, written: first.written });
    const second = pendingWrite();
    // Past the time, but nothing committed yet: everything stays.
    recent.append(message(2), { atMs: KEEP_COMMITTED_MS + 50, written: second.written });
    expect(recent.read(0, 5)?.map((m) => m.offset)).toEqual([0, 1, 2]);
    first.commit();
    await settle();
    // Offsets 0 and 1 committed with the first transaction and are old enough; 2 is not committed.
    recent.append(message(3), { atMs: KEEP_COMMITTED_MS + 60, written: second.written });
    expect(recent.read(0, 5)).toBeUndefined();
    expect(recent.read(2, 5)?.map((m) => m.offset)).toEqual([2, 3]);
    second.commit();
    await settle();
    // Committed, but appended too recently to go.
    recent.append(message(4), { atMs: KEEP_COMMITTED_MS + 100, written: pendingWrite().written });
    expect(recent.read(2, 5)?.map((m) => m.offset)).toEqual([2, 3, 4]);
  });

  it('keeps the messages of a write that failed for the count bound, as uncommitted', async () => {
    const recent = new RecentMessages();
    const failing = pendingWrite();
    recent.append(message(0), { atMs: 0, written: failing.written });
    failing.fail();
    await settle();
    recent.append(message(1), { atMs: 10 * KEEP_COMMITTED_MS, written: pendingWrite().written });
    expect(recent.read(0, 5)?.map((m) => m.offset)).toEqual([0, 1]);
  });

  it('does not count a commit of the offsets before a gap as a commit of the offsets after it', async () => {
    const recent = new RecentMessages();
    const before = pendingWrite();
    recent.append(message(10), { atMs: 0, written: before.written });
    // The store reused offsets (a restart): the kept run starts over at 3.
    recent.append(message(3), { atMs: 1, written: pendingWrite().written });
    before.commit();
    await settle();
    recent.append(message(4), { atMs: 10 * KEEP_COMMITTED_MS, written: pendingWrite().written });
    expect(recent.read(3, 5)?.map((m) => m.offset)).toEqual([3, 4]);
  });
});
