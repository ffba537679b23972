import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initialPushState, ManualClock } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BrokerStore } from '../../store/broker-store.js';
import { openLmdbStore } from '../../store/lmdb-store.js';
import type { DeliveryRecord } from '../../store/records.js';
import { ManualTimers } from '../timers/manual-timers.test-support.js';
import { Scheduler } from '../timers/scheduler.js';
import { DeliveryRecords, FLUSH_CHUNK_RECORDS, WRITE_BEHIND_MS } from './delivery-records.js';
import { GroupRegistry } from './group-registry.js';
import { RestartHorizon } from './restart-horizon.js';
import { TopicRegistry } from './topic-registry.js';

let dir: string;
let store: BrokerStore;
let clock: ManualClock;
let timers: ManualTimers;
let groups: GroupRegistry;
let records: DeliveryRecords;

const address = { group: 'g', topic: 't', offset: 7 };
const ready: DeliveryRecord = { consumer: 'push', state: initialPushState(), messageId: 'm7' };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-records-'));
  store = openLmdbStore({ path: dir });
  clock = new ManualClock(0);
  timers = new ManualTimers(clock);
  groups = new GroupRegistry(store, clock, true);
  records = new DeliveryRecords(
    store,
    groups,
    timers,
    new Scheduler({ store, clock, timers }),
    new RestartHorizon(),
  );
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('DeliveryRecords', () => {
  it('keeps a deferred state in memory until the write-behind flush', async () => {
    records.put(address, ready, 'deferred');
    expect(records.get(address)).toEqual(ready);
    expect(store.getDelivery(address)).toBeUndefined();
    await timers.advanceBy(WRITE_BEHIND_MS, async () => {});
    expect(store.getDelivery(address)).toEqual(ready);
  });

  it('writes nothing for a state settled within the window', async () => {
    records.put(address, ready, 'deferred');
    records.delete(address);
    await timers.advanceBy(WRITE_BEHIND_MS, () => store.committed());
    expect(records.get(address)).toBeUndefined();
    expect([...store.scanDeliveries()]).toEqual([]);
  });

  it('deletes the stored record under a buffered one', async () => {
    records.put(address, ready, 'now');
    records.put(address, { ...ready, messageId: 'newer' }, 'deferred');
    records.delete(address);
    await store.committed();
    expect(store.getDelivery(address)).toBeUndefined();
  });

  it('buffers a first state without reading the store, and writes it with the flush', async () => {
    const getDelivery = store.getDelivery.bind(store);
    const hasDelivery = store.hasDelivery.bind(store);
    let reads = 0;
    store.getDelivery = (at) => {
      reads++;
      return getDelivery(at);
    };
    store.hasDelivery = (at) => {
      reads++;
      return hasDelivery(at);
    };
    records.putNew(address, ready);
    records.putNew({ ...address, offset: 8 }, { ...ready, messageId: 'm8' });
    records.delete({ ...address, offset: 8 });
    expect(reads).toBe(0);
    await timers.advanceBy(WRITE_BEHIND_MS, () => store.committed());
    expect([...store.scanDeliveries()].map(({ record }) => record.messageId)).toEqual(['m7']);
  });

  it('writes a durable state at once, replacing a buffered one', () => {
    records.put(address, ready, 'deferred');
    records.put(address, { ...ready, messageId: 'durable' }, 'now');
    expect(store.getDelivery(address)?.messageId).toBe('durable');
  });

  it('writes a moved cursor with the flush, not before', async () => {
    const group = groups.put('g', {});
    group.cursors.set('t', 42);
    records.cursorMoved(group, 't');
    await store.committed();
    expect(store.listCursors()).toEqual([]);
    records.flush();
    await store.committed();
    expect(store.listCursors()).toEqual([{ group: 'g', topic: 't', nextOffset: 42 }]);
  });

  it('flushes a chunk per turn, each state as it is then, and the cursor as it was, with the last chunk', async () => {
    const group = groups.put('g', {});
    const count = FLUSH_CHUNK_RECORDS + 10;
    const at = (offset: number) => ({ group: 'g', topic: 't', offset });
    for (let offset = 0; offset < count; offset++)
      records.putNew(at(offset), { ...ready, messageId: `m${offset}` });
    group.cursors.set('t', count);
    records.cursorMoved(group, 't');
    // The settle step after each timer callback: the first is the write-behind timer's, with the
    // flush's first chunk; the next callback is the flush's second and last chunk.
    let callbacks = 0;
    let afterFirstChunk: { deliveries: number; cursors: number } | undefined;
    await timers.advanceBy(WRITE_BEHIND_MS, async () => {
      await store.committed();
      if (++callbacks !== 1) return;
      afterFirstChunk = {
        deliveries: [...store.scanDeliveries()].length,
        cursors: store.listCursors().length,
      };
      // Between chunks: one state settles, one moves on, the cursor moves further.
      records.delete(at(count - 1));
      records.put(at(count - 2), { ...ready, messageId: 'changed' }, 'deferred');
      group.cursors.set('t', count + 5);
      records.cursorMoved(group, 't');
    });
    expect(afterFirstChunk).toEqual({ deliveries: FLUSH_CHUNK_RECORDS, cursors: 0 });
    const stored = [...store.scanDeliveries()];
    expect(stored).toHaveLength(count - 1);
    expect(stored.find(({ address: { offset } }) => offset === count - 2)?.record.messageId).toBe('changed');
    expect(store.listCursors()).toEqual([{ group: 'g', topic: 't', nextOffset: count }]);
    // The later cursor goes with the next flush.
    await timers.advanceBy(WRITE_BEHIND_MS, () => store.committed());
    expect(store.listCursors()).toEqual([{ group: 'g', topic: 't', nextOffset: count + 5 }]);
  });

  it('does not take a delivery recovered at start and settled before the log scan reached it for a new message', async () => {
    // A past life stored message 7 and its record (a retry, say), but its cursor only up to 3.
    const message = {
      messageId: 'm7',
      topic: 't',
      offset: 7,
      body: new Uint8Array(),
      bornAt: 0,
      storedAt: 0,
    };
    void store.putTopic({ name: 't', config: { type: 'normal' }, createdAt: 0 });
    void store.appendMessage(message);
    void store.putDelivery(address, ready);
    await store.durable();
    const group = groups.put('g', {});
    group.cursors.set('t', 3);
    // What a broker starting on this store sees: the registry's load sets the horizon at offset 7.
    const topics = new TopicRegistry(store, clock, true);
    topics.load();
    const scheduler = new Scheduler({ store, clock, timers });
    const restarted = new DeliveryRecords(store, groups, timers, scheduler, topics.restartHorizon);
    expect(restarted.takenBeforeRestart('g', message)).toBe(true);
    // Committed in this life before the scan got to offset 7: the record is deleted, and the
    // history entry saying so is not committed yet (here: not written at all).
    restarted.delete(address);
    expect(restarted.takenBeforeRestart('g', message)).toBe(true);
    // The scan passes an offset once; after that, the store decides.
    expect(restarted.takenBeforeRestart('g', message)).toBe(false);
  });

  it('reads a state it wrote at once back from memory, and from the store once the write failed', async () => {
    const waiting: DeliveryRecord = { ...ready, messageId: 'waiting' };
    const getDelivery = store.getDelivery.bind(store);
    let reads = 0;
    store.getDelivery = (at) => {
      reads++;
      return getDelivery(at);
    };
    records.put(address, waiting, 'now');
    await store.committed();
    expect(records.get(address)).toBe(waiting);
    expect(reads).toBe(0);
    // A state buffered behind it is the newest, and after its flush the store's.
    const next: DeliveryRecord = { ...ready, messageId: 'next' };
    records.put(address, next, 'deferred');
    await timers.advanceBy(WRITE_BEHIND_MS, () => store.committed());
    expect(records.get(address)).toEqual(next);
    // A write the store refuses is not read back from memory.
    const other = { ...address, offset: 9 };
    const refused: DeliveryRecord = { ...ready, messageId: 'refused' };
    store.putDelivery = () => Promise.reject(new Error('disk full'));
    records.put(other, refused, 'now');
    expect(records.get(other)).toBe(refused);
    await new Promise((resolve) => setImmediate(resolve));
    expect(records.get(other)).toBeUndefined();
  });
});
