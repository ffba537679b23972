import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres, { type Sql } from 'postgres';
import { describe, expect, it } from 'vitest';
import type { BrokerStore } from '../broker-store.js';
import { openLmdbStore } from '../lmdb-store.js';
import type { HistoryRecord, StoredMessage } from '../records.js';
import { LAYOUT_V1_SAMPLE as SAMPLE } from '../schema/layout-v1-sample.test-support.js';
import { readContents, writeContents } from '../schema/store-contents.test-support.js';
import { postgresForThisFile } from './postgres-server.test-support.js';
import { openPostgresStore } from './postgres-store.js';
import { keepWarm, WarmCopy } from './warm-copy.js';

const pg = postgresForThisFile();

async function freshDatabase(): Promise<{ url: string; sql: Sql; owner: BrokerStore }> {
  const url = await pg.createDatabase('warm');
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  pg.cleanup(() => sql.end({ timeout: 5 }));
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-warm-owner-'));
  const owner = await openPostgresStore({ url, cacheDir: join(dir, 'cache'), owner: 'owner' });
  pg.cleanup(async () => {
    await owner.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { url, sql, owner };
}

/** A scratch local copy, as a broker's. */
function scratchCopy(): BrokerStore {
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-warm-copy-'));
  const store = openLmdbStore({ path: dir, flushPolicy: 'commit', scratch: true });
  pg.cleanup(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

const T0 = 1_750_000_000_000;

function message(topic: string, offset: number, messageId = `${topic}-${offset}`): StoredMessage {
  return {
    messageId,
    topic,
    offset,
    body: new Uint8Array([offset % 256]),
    bornAt: T0,
    storedAt: T0 + offset,
  };
}

function committed(topic: string, offset: number, group = 'billing'): HistoryRecord & { lease: number } {
  return {
    group,
    topic,
    offset,
    deliveryAttempt: 1,
    consumer: 'push',
    deliveredAt: T0 + offset,
    settledAt: T0 + offset + 1,
    result: 'committed',
    lease: offset + 1,
  };
}

/** Send `count` messages to `topic` from `from`, each with a committed delivery. */
async function appendConsumed(store: BrokerStore, topic: string, from: number, count: number): Promise<void> {
  for (let offset = from; offset < from + count; offset++) {
    void store.appendMessage(message(topic, offset));
    void store.putMessageLocation(`${topic}-${offset}`, { topic, offset, storedAt: T0 + offset });
    void store.appendHistory(`${topic}-${offset}`, committed(topic, offset));
  }
  await store.durable();
}

/** Retention as the engine runs it: the messages below `below` but `kept` deleted, with the topic's new range. */
async function expire(
  store: BrokerStore,
  topic: string,
  below: number,
  kept: readonly number[],
): Promise<void> {
  const record = store.listTopics().find((candidate) => candidate.name === topic);
  if (!record) throw new Error(`no topic ${topic}`);
  for (const stored of store.readMessages(topic, 0, 10_000)) {
    if (stored.offset >= below || kept.includes(stored.offset)) continue;
    void store.deleteExpiredMessage({ topic, offset: stored.offset, messageId: stored.messageId });
  }
  void store.putTopic({ ...record, expiredBelow: below, firstOffset: Math.min(below, ...kept) });
  await store.durable();
}

describe('a warm copy of a PostgreSQL store', () => {
  it('follows appends, history and retention, survivors included, and completes into what a load gives', async () => {
    const { sql, owner } = await freshDatabase();
    await writeContents(owner, SAMPLE);
    void owner.putTopic({ name: 'stream', config: { type: 'normal' }, createdAt: T0 });
    await appendConsumed(owner, 'stream', 0, 50);

    const warmCopy = scratchCopy();
    const warm = new WarmCopy(warmCopy);
    await warm.catchUp(sql);
    expect(warm.loaded).toBe(true);
    expect(warmCopy.readMessages('stream', 0, 100)).toHaveLength(50);

    // The owner goes on: more messages and deliveries, retention keeping offsets 3 and 7 (held).
    await appendConsumed(owner, 'stream', 50, 30);
    await expire(owner, 'stream', 40, [3, 7]);
    void owner.putTopic({ name: 'late', config: { type: 'normal' }, createdAt: T0 + 5 });
    await appendConsumed(owner, 'late', 0, 5);
    // What it read: the 35 messages appended, and a history row for each (`appendConsumed`).
    expect(await warm.catchUp(sql)).toBe(70);
    expect(warmCopy.readMessages('stream', 0, 100).map((stored) => stored.offset)).toEqual([
      3,
      7,
      ...Array.from({ length: 40 }, (_, i) => 40 + i),
    ]);
    expect(warmCopy.readHistory('stream-10')).toEqual([]);
    expect(warmCopy.readHistory('stream-60')).toHaveLength(1);
    expect(warmCopy.locateMessage('stream-10')).toBeUndefined();

    // A survivor goes at last (its frontier unchanged), more traffic, and a catch-up with nothing
    // new, which says so: a standby then reads again only after its idle interval.
    expect(await warm.catchUp(sql)).toBe(0);
    void owner.deleteExpiredMessage({ topic: 'stream', offset: 3, messageId: 'stream-3' });
    await owner.durable();
    await appendConsumed(owner, 'stream', 80, 10);
    void owner.appendHistory('late-1', committed('late', 1, 'audit'));
    // A history row written again under its key (a lease a crash lost, granted again), and a
    // message rewritten in place (a DLQ copy marked redriven).
    void owner.appendHistory('stream-60', { ...committed('stream', 60), result: 'released' });
    void owner.appendMessage({ ...message('stream', 50), properties: { redriven: 'yes' } });
    await owner.durable();

    await warm.complete(sql);
    // What a broker that found the lease free loads, in one go.
    const cold = scratchCopy();
    await new WarmCopy(cold).complete(sql);
    expect(readContents(warmCopy)).toEqual(readContents(cold));
    expect(readContents(warmCopy).messages).toHaveLength(readContents(owner).messages.length);
    expect(warmCopy.readMessages('stream', 0, 100).map((stored) => stored.offset)[0]).toBe(7);
    expect(warmCopy.readHistory('late-1')).toHaveLength(2);
    expect(warmCopy.readHistory('stream-60')).toMatchObject([{ result: 'released' }]);
    expect(warmCopy.getMessage('stream', 50)?.properties).toEqual({ redriven: 'yes' });
  }, 60_000);

  it('keeps warm in the background: says once when the first load is done, and stops after its step', async () => {
    const { sql, owner } = await freshDatabase();
    await writeContents(owner, SAMPLE);
    const copy = new WarmCopy(scratchCopy());
    const loads: number[] = [];
    let loaded!: () => void;
    const firstLoad = new Promise<void>((resolve) => {
      loaded = resolve;
    });
    const warming = keepWarm(
      copy,
      sql,
      { busyMs: 10, idleMs: 10 },
      {
        onLoaded: (elapsedMs) => {
          loads.push(elapsedMs);
          loaded();
        },
      },
    );
    await firstLoad;
    await appendConsumed(owner, 'orders', 6, 3);
    await warming.stop();
    expect(copy.loaded).toBe(true);
    expect(loads).toHaveLength(1);
  }, 60_000);
});
