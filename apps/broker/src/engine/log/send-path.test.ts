import { BrokerError, type OutgoingMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BrokerStore } from '../../store/broker-store.js';
import { BrokerMetrics } from '../broker-metrics.js';
import { EngineHarness, START_MS } from '../engine-test-harness.test-support.js';
import { TopicRegistry } from '../model/topic-registry.js';
import { SendPath, type SendPathDeps } from './send-path.js';

const DEDUP_WINDOW_MS = 60_000;

let h: EngineHarness;
let appended: string[];
let throttled: BrokerError | undefined;

function sendPath(overrides: Partial<SendPathDeps> = {}): SendPath {
  return new SendPath({
    store: h.store,
    clock: h.clock,
    topics: h.topics,
    metrics: new BrokerMetrics({ groupGauges: () => [] }),
    onAppended: (topic) => appended.push(topic),
    maxBodyBytes: 16,
    dedupWindowMs: DEDUP_WINDOW_MS,
    maxDelayMs: 60_000,
    throttle: () => throttled,
    ...overrides,
  });
}

function message(id: string, fields: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return { messageId: id, topic: 'orders', body: new Uint8Array([1, 2, 3]), bornAt: START_MS, ...fields };
}

/** The harness's store, counting the reads of its id index. */
function countingIndexReads(): { store: BrokerStore; reads: () => number } {
  let reads = 0;
  const store = h.store;
  const counting: BrokerStore = Object.create(store);
  counting.locateMessage = (messageId) => {
    reads++;
    return store.locateMessage(messageId);
  };
  for (const name of ['appendMessage', 'putMessageLocation', 'durable'] as const) {
    Object.defineProperty(counting, name, { value: store[name].bind(store) });
  }
  return { store: counting, reads: () => reads };
}

const storedIds = (topic = 'orders') => h.store.readMessages(topic, 0, 100).map((m) => m.messageId);

beforeEach(() => {
  h = new EngineHarness('sendpath');
  appended = [];
  throttled = undefined;
});

afterEach(() => h.close());

describe('SendPath (R1, R3)', () => {
  it('stores a batch at consecutive offsets, indexes the ids, wakes each topic once, answers once durable', async () => {
    const receipts = await sendPath().send([message('a'), message('b'), message('c', { topic: 'refunds' })]);
    expect(receipts).toEqual([
      { ok: true, messageId: 'a', offset: 0, duplicate: false },
      { ok: true, messageId: 'b', offset: 1, duplicate: false },
      { ok: true, messageId: 'c', offset: 0, duplicate: false },
    ]);
    expect(storedIds()).toEqual(['a', 'b']);
    expect(h.store.locateMessage('b')).toEqual({ topic: 'orders', offset: 1, storedAt: START_MS });
    expect(appended).toEqual(['orders', 'refunds']);
  });

  it('answers a resent id with the first receipt inside the dedup window, and stores it again after', async () => {
    const path = sendPath();
    await path.send([message('a')]);
    expect(await path.send([message('a', { body: new Uint8Array([9]) })])).toEqual([
      { ok: true, messageId: 'a', offset: 0, duplicate: true },
    ]);
    expect(storedIds()).toEqual(['a']);
    h.clock.advanceBy(DEDUP_WINDOW_MS);
    expect(await path.send([message('a')])).toEqual([
      { ok: true, messageId: 'a', offset: 1, duplicate: false },
    ]);
  });

  it('stores an id sent twice in one batch once, the copy answered with the original offset', async () => {
    const receipts = await sendPath().send([message('a'), message('a')]);
    expect(receipts.map((r) => r.ok && [r.offset, r.duplicate])).toEqual([
      [0, false],
      [0, true],
    ]);
    expect(storedIds()).toEqual(['a']);
  });

  it('refuses an oversize body and too many property bytes with 413, storing nothing', async () => {
    const receipts = await sendPath().send([
      message('big', { body: new Uint8Array(17) }),
      message('props', { properties: { k: 'v'.repeat(20_000) } }),
    ]);
    expect(receipts.map((r) => !r.ok && r.error.code)).toEqual([413, 413]);
    expect(storedIds()).toEqual([]);
    expect(appended).toEqual([]);
  });

  it('sets deliverAt from delayMs or delayLevel (T1) and refuses a delay past maxDelayMs', async () => {
    const path = sendPath();
    h.topics.put('later', { type: 'delay' });
    const [byMs, byLevel, tooFar] = await path.send([
      message('ms', { topic: 'later', delayMs: 5_000 }),
      message('level', { topic: 'later', delayLevel: 4 }),
      message('far', { topic: 'later', delayMs: 60_001 }),
    ]);
    expect([byMs?.ok, byLevel?.ok]).toEqual([true, true]);
    expect(h.topics.getMessage('later', 0)?.deliverAt).toBe(START_MS + 5_000);
    expect(h.topics.getMessage('later', 1)?.deliverAt).toBe(START_MS + 30_000);
    expect(tooFar).toMatchObject({ ok: false, error: { code: 400 } });
    expect(storedIds('later')).toEqual(['ms', 'level']);
  });

  it('refuses a message that does not fit its topic type, naming the topic and its type', async () => {
    h.topics.put('sequenced', { type: 'fifo' });
    const [receipt] = await sendPath().send([message('x', { topic: 'sequenced' })]);
    expect(receipt).toMatchObject({
      ok: false,
      error: { details: { topic: 'sequenced', topicType: 'fifo' } },
    });
    expect(receipt?.ok === false && receipt.error.message).toContain('messageGroup');
    expect(storedIds('sequenced')).toEqual([]);
  });

  it('answers the throttle’s error instead of storing (R4), and an unknown topic with 404 when topics are not created', async () => {
    throttled = BrokerError.of('TOO_MANY_REQUESTS', 'backlog over the limit');
    const [slowed] = await sendPath().send([message('a')]);
    expect(slowed).toMatchObject({ ok: false, error: { code: 530, message: 'backlog over the limit' } });
    throttled = undefined;
    const strict = sendPath({ topics: new TopicRegistry(h.store, h.clock, false) });
    const [unknown] = await strict.send([message('b', { topic: 'nowhere' })]);
    expect(unknown).toMatchObject({ ok: false, error: { code: 404, details: { topic: 'nowhere' } } });
    expect(storedIds()).toEqual([]);
  });

  it('reads the id index only for an id it may have stored within the window, not for a new one', async () => {
    const { store, reads } = countingIndexReads();
    const path = sendPath({ store });
    await path.send([message('a'), message('b')]);
    expect(reads()).toBe(0);
    expect(await path.send([message('a')])).toEqual([
      { ok: true, messageId: 'a', offset: 0, duplicate: true },
    ]);
    expect(reads()).toBe(1);
  });

  it('after a restart, answers an id the earlier run stored with its receipt, reading the index until that run’s messages leave the window', async () => {
    await sendPath().send([message('a'), message('b')]);
    await h.restart();
    h.clock.advanceBy(DEDUP_WINDOW_MS - 1);
    const { store, reads } = countingIndexReads();
    const path = sendPath({ store });
    expect(await path.send([message('b'), message('c')])).toEqual([
      { ok: true, messageId: 'b', offset: 1, duplicate: true },
      { ok: true, messageId: 'c', offset: 2, duplicate: false },
    ]);
    expect(reads()).toBe(2);
    h.clock.advanceBy(1);
    await path.send([message('d')]);
    expect(reads()).toBe(2);
    expect(await path.send([message('c')])).toEqual([
      { ok: true, messageId: 'c', offset: 2, duplicate: true },
    ]);
  });

  it('with a dedup window of 0, still stores a copy racing its pending original once', async () => {
    const path = sendPath({ dedupWindowMs: 0 });
    const [first, second] = await Promise.all([
      path.send([message('a'), message('a')]),
      path.send([message('a')]),
    ]);
    expect([...(first ?? []), ...(second ?? [])].map((r) => r.ok && [r.offset, r.duplicate])).toEqual([
      [0, false],
      [0, true],
      [0, true],
    ]);
    expect(storedIds()).toEqual(['a']);
    expect(path.isPending('a')).toBe(false);
  });

  it('after a batch that failed on a bug, holds none of its ids as pending', async () => {
    let calls = 0;
    const path = sendPath({
      throttle: () => {
        calls++;
        if (calls === 2) throw new Error('a bug');
        return undefined;
      },
    });
    await expect(path.send([message('a'), message('b')])).rejects.toThrow('a bug');
    expect(path.isPending('a')).toBe(false);
    expect(await path.send([message('c')])).toEqual([
      { ok: true, messageId: 'c', offset: 1, duplicate: false },
    ]);
  });
});
