import type { PushState } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryAddress, DeliveryRecord, HistoryRecord, StoredMessage } from '../../store/records.js';
import { BroadcastInstance, heldKey } from '../broadcast/broadcast-instance.js';
import { EngineHarness, heldDelivery } from '../engine-test-harness.test-support.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { describeMessage, type MessageViewDeps } from './message-view.js';

let h: EngineHarness;
/** Live delivery records: the view reads only `get`, so a map stands in for DeliveryRecords. */
let live: Map<string, DeliveryRecord>;
let instances: Map<string, BroadcastInstance[]>;

const addressKey = ({ group, topic, offset }: DeliveryAddress) => `${group}/${topic}/${offset}`;
const counters = { failures: 1, releases: 0, lease: 2 };

function deps(): MessageViewDeps {
  const records: Pick<DeliveryRecords, 'get'> = { get: (address) => live.get(addressKey(address)) };
  return {
    store: h.store,
    topics: h.topics,
    groups: h.groups,
    records: records as DeliveryRecords,
    clock: h.clock,
    broadcastInstances: (group) => instances.get(group) ?? [],
  };
}

function setRecord(group: string, message: StoredMessage, state: PushState): void {
  live.set(addressKey({ group, topic: message.topic, offset: message.offset }), {
    consumer: 'push',
    state,
    messageId: message.messageId,
  });
}

function history(
  message: StoredMessage,
  group: string,
  result: HistoryRecord['result'],
  lease: number,
  instance?: string,
): Promise<void> {
  return h.store.appendHistory(message.messageId, {
    group,
    ...(instance === undefined ? {} : { instance }),
    topic: message.topic,
    offset: message.offset,
    lease,
    deliveryAttempt: lease,
    consumer: 'push',
    deliveredAt: lease,
    settledAt: lease + 1,
    result,
  });
}

/**
 * Where the message stands for each group, as `group[/instance]: state`. The message's id is
 * found through the store's index, so the append must have committed (the engine waits for it).
 */
function states(messageId: string): string[] | undefined {
  return describeMessage(messageId, deps())?.groups.map(
    (g) => `${g.group}${g.instance === undefined ? '' : `/${g.instance}`}: ${g.state}`,
  );
}

/** `group` has a cursor on `topic` at `offset`, and reads it, as the dispatcher records it. */
function reads(group: GroupRuntime, topic: string, offset: number): void {
  group.cursors.set(topic, offset);
  h.groups.addReader(group, topic);
}

beforeEach(() => {
  h = new EngineHarness('message-view');
  live = new Map();
  instances = new Map();
});

afterEach(() => h.close());

describe('describeMessage', () => {
  it('knows nothing of an unknown id, or of an id whose message is not stored', async () => {
    expect(describeMessage('nope', deps())).toBeUndefined();
    void h.store.putMessageLocation('ghost', { topic: 'a', offset: 9, storedAt: 0 });
    await h.committed();
    expect(describeMessage('ghost', deps())).toBeUndefined();
  });

  it('lists only the groups that read the message’s topic', async () => {
    const message = h.append('a');
    await h.committed();
    reads(h.groups.put('reads-a', {}), 'a', 0);
    reads(h.groups.put('reads-b', {}), 'b', 0);
    const view = describeMessage(message.messageId, deps());
    expect(view?.message).toBe(message);
    expect(view?.groups).toEqual([{ group: 'reads-a', state: 'pending', history: [] }]);
  });

  it('asks the topic’s readers only, never every group of the broker, and still lists each reader', async () => {
    const message = h.append('a');
    await h.committed();
    for (let tenant = 0; tenant < 1_000; tenant++)
      reads(h.groups.put(`tenant-${tenant}`, {}), `t${tenant}`, 0);
    reads(h.groups.put('first', {}), 'a', 0);
    reads(h.groups.put('second', {}), 'a', 1);
    const walk = vi.spyOn(h.groups, 'list');
    expect(states(message.messageId)).toEqual(['first: pending', 'second: committed']);
    expect(walk).not.toHaveBeenCalled();
  });

  it('takes a clustering group’s state from its live delivery record', async () => {
    const message = h.append('a');
    await h.committed();
    const byState: [string, PushState][] = [
      ['ready', { state: 'ready', ...counters }],
      ['inflight', { state: 'inflight', leaseDeadlineMs: 9, deliveryAttempt: 2, ...counters }],
      ['waiting', { state: 'waitingRetry', retryNumber: 1, retryDelayMs: 5, retryAtMs: 9, ...counters }],
      ['commit', { state: 'commit', ...counters }],
      ['dlq', { state: 'dlq', reason: 'FAILURE', ...counters }],
    ];
    for (const [group, state] of byState) {
      reads(h.groups.put(group, {}), 'a', 1);
      setRecord(group, message, state);
    }
    const view = describeMessage(message.messageId, deps());
    expect(view?.groups.map(({ group, state, deliveryAttempt }) => [group, state, deliveryAttempt])).toEqual([
      ['ready', 'ready', undefined],
      ['inflight', 'inflight', 2],
      ['waiting', 'waitingRetry', undefined],
      ['commit', 'committed', undefined],
      ['dlq', 'dlq', undefined],
    ]);
    expect(view?.groups.find((g) => g.group === 'ready')).not.toHaveProperty('deliveryAttempt');
  });

  it('is pending at or after the cursor; behind it, says what the last delivery did', async () => {
    const message = h.append('a');
    reads(h.groups.put('ahead', {}), 'a', 0);
    reads(h.groups.put('done', {}), 'a', 1);
    reads(h.groups.put('dead', {}), 'a', 1);
    reads(h.groups.put('filtered', { history: 'full' }), 'a', 1);
    // Keeping failures only, a success leaves no entry: the cursor alone says it was consumed.
    reads(h.groups.put('succeeded', {}), 'a', 1);
    reads(h.groups.put('retried', {}), 'a', 1);
    void history(message, 'retried', 'failed', 1);
    void history(message, 'done', 'failed', 1);
    void history(message, 'done', 'committed', 2);
    void history(message, 'dead', 'committed', 1);
    void history(message, 'dead', 'deadLettered', 2);
    await h.committed();
    expect(states(message.messageId)).toEqual([
      'ahead: pending',
      'done: committed',
      'dead: dlq',
      'filtered: skipped',
      'succeeded: committed',
      'retried: committed',
    ]);
  });

  it('puts a held retry (stored under its negated lease) where it happened, and reads state past it', async () => {
    const message = h.append('a');
    reads(h.groups.put('paused', {}), 'a', 1);
    void history(message, 'paused', 'failed', 1);
    void history(message, 'paused', 'failed', 2);
    // The retry after delivery 2 fell due at 4 and waited; delivery 3 went at 9, when the pause ended.
    void h.store.appendHistory(message.messageId, {
      group: 'paused',
      topic: message.topic,
      offset: message.offset,
      lease: -2,
      deliveryAttempt: 3,
      consumer: 'push',
      deliveredAt: 4,
      settledAt: 4,
      result: 'held',
      reason: 'group paused',
    });
    void history(message, 'paused', 'committed', 9);
    await h.committed();
    const view = describeMessage(message.messageId, deps());
    expect(view?.groups[0]?.history.map((entry) => [entry.result, entry.deliveredAt])).toEqual([
      ['failed', 1],
      ['failed', 2],
      ['held', 4],
      ['committed', 9],
    ]);
    expect(states(message.messageId)).toEqual(['paused: committed']);
  });

  it('shows a delay message the cursor passed as pending until its time, then skipped (or, keeping failures only, committed)', async () => {
    const message = h.append('a', { deliverAt: h.clock.now() + 1_000 });
    await h.committed();
    reads(h.groups.put('g', { history: 'full' }), 'a', 1);
    reads(h.groups.put('h', {}), 'a', 1);
    expect(states(message.messageId)).toEqual(['g: pending', 'h: pending']);
    h.clock.advanceBy(1_000);
    expect(states(message.messageId)).toEqual(['g: skipped', 'h: committed']);
  });

  it('gives each group its own history of this message only, in delivery order', async () => {
    const message = h.append('a');
    reads(h.groups.put('g', {}), 'a', 1);
    reads(h.groups.put('other', {}), 'a', 1);
    void history(message, 'g', 'timedOut', 1);
    void history(message, 'other', 'committed', 1);
    void history(message, 'g', 'committed', 2);
    void history(message, 'g', 'failed', 7, 'an-instance');
    await h.committed();
    const own = describeMessage(message.messageId, deps())?.groups[0]?.history;
    expect(own?.map(({ group, result, deliveryAttempt }) => [group, result, deliveryAttempt])).toEqual([
      ['g', 'timedOut', 1],
      ['g', 'committed', 2],
    ]);
  });

  it('shows a broadcasting group once per instance that reads the topic (B1)', async () => {
    const messages = h.appendMany('a', 6);
    const at = (offset: number) => messages[offset] as StoredMessage;
    const group = h.groups.put('b', { consumeMode: 'broadcasting' });
    const instance = new BroadcastInstance(group, 'c1', 0);
    instance.cursors.set('a', 5);
    h.groups.addReader(group, 'a');
    const elsewhere = new BroadcastInstance(group, 'c2', 0);
    elsewhere.cursors.set('other', 0);
    instances.set('b', [instance, elsewhere]);
    instance.held.set(heldKey('a', 0), heldDelivery('a', 0, 'inflight'));
    instance.held.set(heldKey('a', 1), heldDelivery('a', 1, 'ready'));
    instance.delayed.push({ topic: 'a', offset: 2, deliverAt: h.clock.now() + 10 });
    void history(at(3), 'b', 'committed', 1, 'c1');
    void history(at(4), 'b', 'timedOut', 1, 'c1');
    await h.committed();
    expect(messages.map((message) => states(message.messageId))).toEqual([
      ['b/c1: inflight'],
      ['b/c1: ready'],
      ['b/c1: pending'],
      ['b/c1: committed'],
      ['b/c1: failed'],
      ['b/c1: pending'],
    ]);
  });

  it('gives an instance its own history, and passes over what its filter skipped', async () => {
    const message = h.append('a');
    const group = h.groups.put('b', { consumeMode: 'broadcasting' });
    const one = new BroadcastInstance(group, 'c1', 0);
    const two = new BroadcastInstance(group, 'c2', 0);
    one.cursors.set('a', 1);
    two.cursors.set('a', 1);
    h.groups.addReader(group, 'a');
    instances.set('b', [one, two]);
    void history(message, 'b', 'released', 1, 'c1');
    void history(message, 'b', 'failed', 2, 'c1');
    void history(message, 'b', 'committed', 9);
    await h.committed();
    const view = describeMessage(message.messageId, deps());
    expect(view?.groups.map((g) => [g.instance, g.state, g.history.map((e) => e.result)])).toEqual([
      ['c1', 'failed', ['released', 'failed']],
      ['c2', 'skipped', []],
    ]);
  });
});
