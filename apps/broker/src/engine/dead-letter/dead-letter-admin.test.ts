import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import { type ClusteringParts, EngineHarness } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { DeadLetterAdmin } from './dead-letter-admin.js';

let h: EngineHarness;
let parts: ClusteringParts;
let admin: DeadLetterAdmin;
let group: GroupRuntime;

const settle = () => h.committed();
const ids = (messages: readonly StoredMessage[]) => messages.map((m) => m.messageId);
const queued = () => group.readyQueue.take(100, () => true).map((ref) => ref.offset);

/** Append `count` messages to `t` and dead-letter each through the consumer's verdict (D3). */
function deadLetter(count: number): void {
  for (let i = 0; i < count; i++) {
    const message = h.append('t');
    const address = { group: group.name, topic: 't', offset: message.offset };
    const delivered = parts.leaseGrant.toPush(group, { address, message, record: undefined }, 1, 'c1');
    parts.settlement.settle([{ receiptHandle: delivered?.receiptHandle ?? '', deadLetter: true }], 'nack');
  }
}

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

beforeEach(() => {
  h = new EngineHarness('dlqadmin');
  parts = h.clustering(new BrokerMetrics({ groupGauges: () => [] }));
  admin = new DeadLetterAdmin({
    topics: h.topics,
    groups: h.groups,
    applier: parts.applier,
    clock: h.clock,
    timers: h.timers,
  });
  group = h.groups.put('g', {});
});

afterEach(async () => {
  admin.close();
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

describe('DeadLetterAdmin', () => {
  it('lists a group DLQ page by page, with where the next page starts', () => {
    deadLetter(5);
    const first = admin.list('g', 0, 2);
    expect(ids(first.messages)).toEqual(['t-0', 't-1']);
    expect(first.messages[0]?.deadLetter).toMatchObject({ group: 'g', originTopic: 't', originOffset: 0 });
    expect(first.cursor).toBe(2);
    const rest = admin.list('g', 2, 10);
    expect(ids(rest.messages)).toEqual(['t-2', 't-3', 't-4']);
    expect(rest.cursor).toBeNull();
    expect(admin.list('g', 4, 1)).toMatchObject({ cursor: null });
  });

  it('lists an empty DLQ, and refuses an unknown group (404)', () => {
    expect(admin.list('g', 0, 10)).toEqual({ messages: [], cursor: null });
    expect(thrown(() => admin.list('nope', 0, 10))).toMatchObject({
      errorName: 'NOT_FOUND',
      details: { group: 'nope' },
    });
    expect(thrown(() => admin.redrive('nope', {}))).toMatchObject({ errorName: 'NOT_FOUND' });
  });

  it('redrives every entry back to Ready for the group, once, and leaves them out of listings (D2)', async () => {
    deadLetter(3);
    expect(admin.redrive('g', {})).toEqual({ accepted: 3 });
    expect(queued()).toEqual([0, 1, 2]);
    expect(parts.records.get({ group: 'g', topic: 't', offset: 1 })?.state).toMatchObject({
      state: 'ready',
      failures: 0,
      lease: 1,
    });
    expect(group.redriven).toBe(3);
    expect(admin.list('g', 0, 10)).toEqual({ messages: [], cursor: null });
    expect(admin.redrive('g', {})).toEqual({ accepted: 0 });
    expect(group.redriven).toBe(3);
    await Promise.resolve();
    await h.committed();
    expect(h.store.listGroupCounters()).toEqual([{ group: 'g', committed: 0, deadLettered: 3, redriven: 3 }]);
  });

  it('redrives only the messages named', () => {
    deadLetter(3);
    expect(admin.redrive('g', { messageIds: ['t-2', 't-0', 'unknown'] })).toEqual({ accepted: 2 });
    expect(queued()).toEqual([0, 2]);
    expect(ids(admin.list('g', 0, 10).messages)).toEqual(['t-1']);
  });

  it('redrives at most ratePerSecond messages a second, in slices', async () => {
    deadLetter(5);
    // 2 a second: one every 500 ms.
    expect(admin.redrive('g', { ratePerSecond: 2 })).toEqual({ accepted: 5 });
    expect(group.redriven).toBe(1);
    await h.timers.advanceBy(499, settle);
    expect(group.redriven).toBe(1);
    await h.timers.advanceBy(1, settle);
    expect(group.redriven).toBe(2);
    await h.timers.advanceBy(1_000, settle);
    expect(group.redriven).toBe(4);
    await h.timers.advanceBy(10_000, settle);
    expect(group.redriven).toBe(5);
    expect(queued()).toEqual([0, 1, 2, 3, 4]);
  });

  it('takes several messages a slice at high rates: 1 000 a second is 10 every 10 ms', async () => {
    deadLetter(25);
    admin.redrive('g', { ratePerSecond: 1_000 });
    expect(group.redriven).toBe(10);
    await h.timers.advanceBy(10, settle);
    expect(group.redriven).toBe(20);
    await h.timers.advanceBy(10, settle);
    expect(group.redriven).toBe(25);
  });

  it('stops redrives in progress when it closes; what is left stays in the DLQ', async () => {
    deadLetter(3);
    admin.redrive('g', { ratePerSecond: 1 });
    admin.close();
    await h.timers.advanceBy(10_000, settle);
    expect(group.redriven).toBe(1);
    expect(ids(admin.list('g', 0, 10).messages)).toEqual(['t-1', 't-2']);
  });

  it('never redrives an entry twice when paced redrives overlap, though each listed it at its start', async () => {
    deadLetter(2);
    expect(admin.redrive('g', { ratePerSecond: 1 })).toEqual({ accepted: 2 });
    expect(admin.redrive('g', { ratePerSecond: 1 })).toEqual({ accepted: 1 });
    expect(group.redriven).toBe(2);
    await settle();
    // Both are consumed before the first redrive's second slice comes round.
    for (const offset of queued()) {
      const message = h.topics.getMessage('t', offset);
      if (!message) throw new Error('no message');
      const address = { group: group.name, topic: 't', offset };
      const record = parts.records.get(address);
      const delivered = parts.leaseGrant.toPush(group, { address, message, record }, 1, 'c1');
      parts.settlement.settle([{ receiptHandle: delivered?.receiptHandle ?? '' }], 'ack');
    }
    await h.timers.advanceBy(5_000, settle);
    expect(group.redriven).toBe(2);
    expect(group.readyQueue.size).toBe(0);
  });

  it('redrives a group own DLQ entries only', () => {
    deadLetter(1);
    h.groups.put('other', {});
    expect(admin.redrive('other', {})).toEqual({ accepted: 0 });
    expect(group.redriven).toBe(0);
  });
});
