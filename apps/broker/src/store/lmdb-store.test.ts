import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initialPushState } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BrokerStore } from './broker-store.js';
import { openLmdbStore } from './lmdb-store.js';
import type { StoredMessage } from './records.js';

let dir: string;
let store: BrokerStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-store-'));
  store = openLmdbStore({ path: dir });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function message(topic: string, offset: number): StoredMessage {
  return {
    messageId: `m-${topic}-${offset}`,
    topic,
    offset,
    body: new Uint8Array([offset % 256]),
    bornAt: 1,
    storedAt: 2,
  };
}

describe('LMDB store', () => {
  it('appends messages and reads them back in offset order, per topic', async () => {
    for (const offset of [0, 1, 2]) void store.appendMessage(message('a', offset));
    void store.appendMessage(message('b', 0));
    await store.durable();
    expect(store.readMessages('a', 1, 10).map((m) => m.offset)).toEqual([1, 2]);
    expect(store.readMessages('a', 0, 2).map((m) => m.offset)).toEqual([0, 1]);
    expect(store.lastOffset('a')).toBe(2);
    expect(store.lastOffset('b')).toBe(0);
    expect(store.lastOffset('c')).toBeUndefined();
    expect(store.getMessage('a', 2)?.body).toEqual(new Uint8Array([2]));
  });

  it('sees its own pending delivery writes before they commit', async () => {
    const address = { group: 'g', topic: 't', offset: 5 };
    void store.putDelivery(address, { consumer: 'push', state: initialPushState(), messageId: 'm1' });
    expect(store.getDelivery(address)?.state.state).toBe('ready');
    void store.deleteDelivery(address);
    expect(store.getDelivery(address)).toBeUndefined();
    await store.committed();
    expect(store.getDelivery(address)).toBeUndefined();
    expect([...store.scanDeliveries()]).toEqual([]);
  });

  it('orders the schedule by group, then due time', async () => {
    void store.putSchedule(['g2', 50, 't', 1], { kind: 'retryDue' });
    void store.putSchedule(['g1', 300, 't', 2], { kind: 'retryDue' });
    void store.putSchedule(['g1', 100, 't', 3], { kind: 'leaseExpiry', lease: 1 });
    void store.putSchedule(['g1', 100, 's', 9], { kind: 'delayDue' });
    await store.committed();
    expect(store.listScheduleGroups()).toEqual(['g1', 'g2']);
    expect(store.firstSchedule('g1')).toEqual(['g1', 100, 's', 9]);
    expect(store.readDueSchedule('g1', 299, 10).map((due) => due.key)).toEqual([
      ['g1', 100, 's', 9],
      ['g1', 100, 't', 3],
    ]);
    expect(store.readDueSchedule('g1', 300, 10).map((due) => due.key[1])).toEqual([100, 100, 300]);
    // `after` is exclusive, down to the offset.
    expect(store.readDueSchedule('g1', 300, 10, ['g1', 100, 's', 9]).map((due) => due.key)).toEqual([
      ['g1', 100, 't', 3],
      ['g1', 300, 't', 2],
    ]);
    expect(store.readDueSchedule('g1', 300, 10, ['g1', 100, 't', 2])).toHaveLength(2);
    expect(store.scheduleKeys('g1', 10, ['g1', 100, 't', 3])).toEqual([['g1', 300, 't', 2]]);
    expect(store.readDueSchedule('g1', 300, 10)[1]?.entry).toEqual({ kind: 'leaseExpiry', lease: 1 });
    expect(store.countSchedule('g1')).toBe(3);
    void store.deleteSchedule(['g1', 100, 's', 9]);
    void store.deleteSchedule(['g1', 100, 't', 3]);
    await store.committed();
    expect(store.firstSchedule('g1')).toEqual(['g1', 300, 't', 2]);
  });

  it('keeps everything across a reopen', async () => {
    void store.appendMessage(message('a', 0));
    void store.putMessageLocation('m-a-0', { topic: 'a', offset: 0, storedAt: 2 });
    void store.putTopic({ name: 'a', config: { type: 'normal' }, createdAt: 1 });
    await store.close();
    store = openLmdbStore({ path: dir });
    expect(store.locateMessage('m-a-0')).toEqual({ topic: 'a', offset: 0, storedAt: 2 });
    expect(store.listTopics()).toEqual([{ name: 'a', config: { type: 'normal' }, createdAt: 1 }]);
  });

  it('reads history by message id, per group in lease order', async () => {
    const record = {
      group: 'g',
      topic: 't',
      offset: 0,
      deliveryAttempt: 1,
      consumer: 'simple',
      deliveredAt: 1,
      settledAt: 2,
      result: 'committed',
    } as const;
    void store.appendHistory('m1', { ...record, lease: 2, deliveryAttempt: 2 });
    void store.appendHistory('m2', { ...record, lease: 1, offset: 1 });
    void store.appendHistory('m1', { ...record, lease: 1 });
    void store.appendHistory('m1', { ...record, group: 'a', lease: 7 });
    await store.committed();
    expect(store.readHistory('m1').map((entry) => [entry.group, entry.deliveryAttempt])).toEqual([
      ['a', 1],
      ['g', 1],
      ['g', 2],
    ]);
  });

  it('keeps the settling principal of a history entry, and reads entries without one as before', async () => {
    const record = {
      group: 'g',
      topic: 't',
      offset: 0,
      deliveryAttempt: 1,
      consumer: 'push',
      deliveredAt: 1,
      settledAt: 2,
      result: 'committed',
    } as const;
    void store.appendHistory('m1', { ...record, lease: 1 });
    void store.appendHistory('m1', { ...record, lease: 2, principal: 'billing-worker' });
    await store.committed();
    expect(store.readHistory('m1').map((entry) => entry.principal)).toEqual([undefined, 'billing-worker']);
    expect(Object.keys(store.readHistory('m1')[0] ?? {})).not.toContain('principal');
  });
});
