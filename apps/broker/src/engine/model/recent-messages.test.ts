import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../store/records.js';
import { RecentMessages } from './recent-messages.js';

const message = (offset: number, bodyBytes = 1): StoredMessage => ({
  messageId: `m${offset}`,
  topic: 't',
  offset,
  body: new Uint8Array(bodyBytes),
  bornAt: 0,
  storedAt: 0,
});

describe('RecentMessages', () => {
  it('serves the newest messages and sends older reads to the store', () => {
    const recent = new RecentMessages();
    for (let offset = 10; offset < 15; offset++) recent.append(message(offset));
    expect(recent.read(12, 10)?.map((m) => m.offset)).toEqual([12, 13, 14]);
    expect(recent.read(15, 10)).toEqual([]);
    expect(recent.read(9, 10)).toBeUndefined();
    expect(recent.read(16, 10)).toBeUndefined();
  });

  it('keeps at most 4096 messages and 16 MiB of bodies', () => {
    const recent = new RecentMessages();
    for (let offset = 0; offset < 5_000; offset++) recent.append(message(offset));
    expect(recent.read(903, 1)).toBeUndefined();
    expect(recent.read(904, 1)?.[0]?.offset).toBe(904);
    const big = new RecentMessages();
    for (let offset = 0; offset < 5; offset++) big.append(message(offset, 6 * 1024 * 1024));
    expect(big.read(2, 1)).toBeUndefined();
    expect(big.read(3, 5)?.map((m) => m.offset)).toEqual([3, 4]);
  });

  it('replaces a kept message by its newer version', () => {
    const recent = new RecentMessages();
    for (let offset = 0; offset < 3; offset++) recent.append(message(offset));
    recent.replace({ ...message(1), messageId: 'rewritten' });
    recent.replace({ ...message(7), messageId: 'not kept' });
    expect(recent.read(0, 5)?.map((m) => m.messageId)).toEqual(['m0', 'rewritten', 'm2']);
  });

  it('knows nothing before its first message', () => {
    expect(new RecentMessages().read(0, 10)).toBeUndefined();
  });

  it('starts over at a gap in offsets', () => {
    const recent = new RecentMessages();
    recent.append(message(0));
    recent.append(message(5));
    expect(recent.read(0, 1)).toBeUndefined();
    expect(recent.read(5, 1)?.[0]?.offset).toBe(5);
  });
});
