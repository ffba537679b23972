import { DEFAULT_RETENTION_MS, DEFAULT_TOPIC_CONFIG } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../store/records.js';
import { EngineHarness } from '../engine-test-harness.test-support.js';
import { TopicRegistry } from './topic-registry.js';

let h: EngineHarness;

const build =
  (topic: string, id = 'm') =>
  (offset: number): StoredMessage => ({
    messageId: `${id}${offset}`,
    topic,
    offset,
    body: new Uint8Array([offset]),
    bornAt: 1,
    storedAt: 2,
  });

beforeEach(() => {
  h = new EngineHarness('topics');
});

afterEach(() => h.close());

describe('TopicRegistry', () => {
  it('creates an unknown topic with the default config on first use when auto-creation is on', () => {
    const topic = h.topics.require('orders');
    expect(topic).toMatchObject({ name: 'orders', nextOffset: 0, record: { config: DEFAULT_TOPIC_CONFIG } });
    expect(h.topics.require('orders')).toBe(topic);
    expect(h.topics.list().map((t) => t.name)).toEqual(['orders']);
  });

  it('refuses an unknown topic when auto-creation is off, but always has DLQ topics (D1)', () => {
    const topics = new TopicRegistry(h.store, h.clock, false);
    let thrown: unknown;
    try {
      topics.require('orders');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BrokerError);
    expect(thrown).toMatchObject({ errorName: 'NOT_FOUND', details: { topic: 'orders' } });
    expect(topics.get('orders')).toBeUndefined();
    expect(topics.require('%DLQ%payments').name).toBe('%DLQ%payments');
    // A `%DLQ%` prefix with no valid group name after it is not a DLQ topic.
    expect(() => topics.require('%DLQ%')).toThrow(BrokerError);
  });

  it('replaces a config in place: the creation time, offsets and messages stay', async () => {
    const first = h.topics.put('orders', { type: 'normal' });
    const createdAt = first.record.createdAt;
    h.topics.append(first, build('orders'));
    h.clock.advanceBy(5_000);
    const again = h.topics.put('orders', { type: 'fifo', maxBacklogMessages: 3 });
    expect(again).toBe(first);
    expect(again.record).toEqual({
      name: 'orders',
      // Retention is spelled out: a config without it keeps messages for the default 72 h.
      config: { type: 'fifo', maxBacklogMessages: 3, retentionMs: DEFAULT_RETENTION_MS },
      createdAt,
    });
    expect(again.nextOffset).toBe(1);
    await h.committed();
    expect(h.store.listTopics()).toEqual([again.record]);
  });

  it('appends with consecutive offsets, each message built for the offset it gets', () => {
    const topic = h.topics.require('orders');
    const given: number[] = [];
    const messages = [0, 1, 2].map(() =>
      h.topics.append(topic, (offset) => {
        given.push(offset);
        return build('orders')(offset);
      }),
    );
    expect(given).toEqual([0, 1, 2]);
    expect(messages.map((m) => m.offset)).toEqual([0, 1, 2]);
    expect(topic.nextOffset).toBe(3);
    // Each topic has its own offsets.
    expect(h.topics.append(h.topics.require('other'), build('other')).offset).toBe(0);
  });

  it('queues the store write before the message becomes visible, in the same synchronous step', async () => {
    const topic = h.topics.require('orders');
    const appendMessage = h.store.appendMessage.bind(h.store);
    const atQueue: { offset: number; visible: boolean; nextOffset: number }[] = [];
    h.store.appendMessage = (message) => {
      atQueue.push({
        offset: message.offset,
        visible: h.topics.getMessage('orders', message.offset) !== undefined,
        nextOffset: topic.nextOffset,
      });
      return appendMessage(message);
    };
    const message = h.topics.append(topic, build('orders'));
    expect(atQueue).toEqual([{ offset: 0, visible: false, nextOffset: 1 }]);
    // Visible at once, from memory, before the write commits.
    expect(h.topics.getMessage('orders', 0)).toBe(message);
    expect(h.topics.readLog('orders', 0, 10)).toEqual([message]);
    expect(h.store.getMessage('orders', 0)).toBeUndefined();
    await h.committed();
    const stored = h.store.getMessage('orders', 0);
    expect(stored && { ...stored, body: [...stored.body] }).toEqual({ ...message, body: [0] });
  });

  it('recovers each topic’s next offset from its last stored message on load', async () => {
    const orders = h.topics.require('orders');
    for (let i = 0; i < 4; i++) h.topics.append(orders, build('orders'));
    h.topics.put('empty', { type: 'delay' });
    await h.restart();
    expect(h.topics.get('orders')?.nextOffset).toBe(4);
    expect(h.topics.get('empty')).toMatchObject({ nextOffset: 0, record: { config: { type: 'delay' } } });
    const next = h.topics.append(h.topics.require('orders'), build('orders', 'new'));
    expect(next.offset).toBe(4);
  });

  it('reads older messages from the store and the newest from memory after a restart', async () => {
    const orders = h.topics.require('orders');
    for (let i = 0; i < 3; i++) h.topics.append(orders, build('orders'));
    await h.restart();
    const fresh = h.topics.append(h.topics.require('orders'), build('orders', 'new'));
    await h.committed();
    expect(h.topics.readLog('orders', 0, 10).map((m) => m.messageId)).toEqual(['m0', 'm1', 'm2', 'new3']);
    expect(h.topics.readLog('orders', 1, 1).map((m) => m.messageId)).toEqual(['m1']);
    expect(h.topics.readLog('orders', 3, 10)).toEqual([fresh]);
    expect(h.topics.getMessage('orders', 1)?.messageId).toBe('m1');
    expect(h.topics.getMessage('orders', 3)).toBe(fresh);
    expect(h.topics.getMessage('orders', 4)).toBeUndefined();
    expect(h.topics.readLog('orders', 4, 10)).toEqual([]);
  });

  it('forgets expired messages in memory at once and keeps the first offset across a restart, even with every message gone', async () => {
    const orders = h.topics.require('orders');
    const messages = [0, 1, 2].map(() => h.topics.append(orders, build('orders')));
    for (const message of messages) void h.store.deleteExpiredMessage(message);
    h.topics.expire(orders, { expiredBelow: 3 });
    // In memory at once, though the deletions have not committed yet.
    expect(h.topics.readLog('orders', 0, 10)).toEqual([]);
    expect(h.topics.getMessage('orders', 2)).toBeUndefined();
    expect(h.topics.isExpired('orders', 2)).toBe(true);
    expect(h.topics.isExpired('orders', 3)).toBe(false);
    await h.restart();
    expect(h.topics.get('orders')).toMatchObject({
      nextOffset: 3,
      retained: { firstOffset: 3, expiredBelow: 3 },
    });
    // Offsets are never handed out twice.
    expect(h.topics.append(h.topics.require('orders'), build('orders', 'new')).offset).toBe(3);
    expect(h.topics.readLog('orders', 0, 10).map((m) => m.messageId)).toEqual(['new3']);
  });

  it('keeps the survivors a group held when retention passed them, and finds them again after a restart', async () => {
    const orders = h.topics.require('orders');
    const messages = [0, 1, 2, 3, 4].map(() => h.topics.append(orders, build('orders')));
    for (const message of messages.filter((m) => m.offset === 0 || m.offset === 2))
      void h.store.deleteExpiredMessage(message);
    h.topics.expire(orders, { expiredBelow: 4, kept: [1, 3] });
    const ids = () => h.topics.readLog('orders', 0, 10).map((m) => m.messageId);
    expect(ids()).toEqual(['m1', 'm3', 'm4']);
    expect(h.topics.getMessage('orders', 2)).toBeUndefined();
    expect(h.topics.getMessage('orders', 3)?.messageId).toBe('m3');
    await h.restart();
    expect(h.topics.get('orders')?.retained).toMatchObject({
      firstOffset: 1,
      expiredBelow: 4,
      survivors: [1, 3],
    });
    expect(ids()).toEqual(['m1', 'm3', 'm4']);
    const restarted = h.topics.require('orders');
    void h.store.deleteExpiredMessage(messages[1] as StoredMessage);
    h.topics.expire(restarted, { released: [1] });
    expect(ids()).toEqual(['m3', 'm4']);
    expect(restarted.retained.firstOffset).toBe(3);
  });

  it('reads a topic it does not hold from the store', async () => {
    h.append('orders');
    await h.restart();
    expect(h.topics.readLog('orders', 0, 5).map((m) => m.messageId)).toEqual(['orders-0']);
    expect(h.topics.readLog('nowhere', 0, 5)).toEqual([]);
    expect(h.topics.getMessage('nowhere', 0)).toBeUndefined();
  });

  it('rewrites a message in memory at once and in the store with the next commit', async () => {
    const original = h.append('%DLQ%g', { messageId: 'dead' });
    const redriven = { ...original, body: new Uint8Array([9]) };
    h.topics.rewrite(redriven);
    expect(h.topics.getMessage('%DLQ%g', original.offset)).toBe(redriven);
    await h.committed();
    expect([...(h.store.getMessage('%DLQ%g', original.offset)?.body ?? [])]).toEqual([9]);
    // The topic's offsets do not move.
    expect(h.topics.get('%DLQ%g')?.nextOffset).toBe(1);
  });
});
