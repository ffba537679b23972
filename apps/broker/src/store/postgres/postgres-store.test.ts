import { initialPushState } from '@ricochet/core';
import { pack } from 'msgpackr';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import type { BrokerStore } from '../broker-store.js';
import { LayoutVersionError } from '../layout-version.js';
import type { StoredMessage } from '../records.js';
import { LAYOUT_V1_SAMPLE } from '../schema/layout-v1-sample.test-support.js';
import {
  asReadBack,
  readContents,
  type StoreContents,
  writeContents,
} from '../schema/store-contents.test-support.js';
import { POSTGRES_LAYOUT_VERSION, preparePostgresSchema } from './postgres-schema.js';
import {
  holdOpenTransaction,
  message,
  postgresForThisFile,
  storeDatabase,
} from './postgres-server.test-support.js';

const pg = postgresForThisFile();

/**
 * The embedded store's sample with the id index the engine writes: an entry for every message a
 * send stored (not the DLQ copies, which keep their original's id). This store rebuilds the index
 * from the messages at load, so that is what a reopen reads back.
 */
const SAMPLE: StoreContents = {
  ...LAYOUT_V1_SAMPLE,
  locations: LAYOUT_V1_SAMPLE.messages
    .filter((stored) => stored.deadLetter === undefined)
    .map((stored) => [
      stored.messageId,
      { topic: stored.topic, offset: stored.offset, storedAt: stored.storedAt },
    ]),
};

describe('PostgreSQL store', () => {
  it('stores every kind of record and reads it all back after a reopen, through a fresh local copy', async () => {
    const { open } = await storeDatabase(pg);
    const first = await open();
    await writeContents(first, SAMPLE);
    expect(readContents(first)).toEqual(asReadBack(SAMPLE));
    await first.close();
    const second = await open({ owner: 'another broker' });
    expect(readContents(second)).toEqual(asReadBack(SAMPLE));
  }, 30_000);

  it('writes no id-index row, and rebuilds the index at load: the newest message of an id, never a DLQ copy', async () => {
    const { open, sql } = await storeDatabase(pg);
    const first = await open();
    const stored = (topic: string, offset: number, messageId: string, storedAt: number): StoredMessage => ({
      ...message(topic, offset),
      messageId,
      storedAt,
    });
    // Ids stored again after the dedup window: in a topic loaded before the newer one, and after it.
    const writes = [
      stored('a', 0, 'again-later', 30),
      stored('b', 0, 'again-earlier', 20),
      stored('b', 1, 'again-later', 10),
      stored('c', 0, 'again-earlier', 40),
      stored('c', 1, 'again-in-topic', 50),
      stored('c', 2, 'again-in-topic', 60),
      {
        ...stored('%DLQ%g', 0, 'again-later', 70),
        deadLetter: {
          group: 'g',
          originTopic: 'a',
          originOffset: 0,
          attempts: 3,
          reason: 'maxRetries',
          deadLetteredAt: 70,
          lastLease: 3,
        },
      },
    ];
    // Written in the order a broker stores them, the order of their storedAt.
    for (const record of writes.sort((x, y) => x.storedAt - y.storedAt)) {
      void first.appendMessage(record);
      if (record.deadLetter === undefined) {
        void first.putMessageLocation(record.messageId, {
          topic: record.topic,
          offset: record.offset,
          storedAt: record.storedAt,
        });
      }
    }
    await first.durable();
    const tables = await sql<
      { name: string }[]
    >`select table_name as name from information_schema.tables where table_name like 'ricochet_%'`;
    expect(tables.map((table) => table.name)).not.toContain('ricochet_message_ids');
    const locations = (store: BrokerStore) =>
      ['again-later', 'again-earlier', 'again-in-topic'].map((id) => store.locateMessage(id));
    const expected = [
      { topic: 'a', offset: 0, storedAt: 30 },
      { topic: 'c', offset: 0, storedAt: 40 },
      { topic: 'c', offset: 2, storedAt: 60 },
    ];
    expect(locations(first)).toEqual(expected);
    await first.close();
    expect(locations(await open({ owner: 'another broker' }))).toEqual(expected);
  }, 30_000);

  it('migrates a database of layout 2 by its version alone: its rows of plain MessagePack are read beside the records written after', async () => {
    const { open, sql } = await storeDatabase(pg);
    const first = await open();
    void first.appendMessage(message('a', 0));
    await first.durable();
    await first.close();
    // As a broker of layout 2 left it: the message packed as a plain map.
    const before: StoredMessage = { ...message('a', 0), tag: 'old' };
    await sql`update ricochet_messages set value = ${pack(before)} where topic = 'a' and msg_offset = 0`;
    await sql`update ricochet_meta set value = 2 where name = 'layoutVersion'`;
    const migrated = await open({ owner: 'another broker' });
    void migrated.appendMessage(message('a', 1));
    await migrated.durable();
    const plain = (stored: StoredMessage) => ({ ...stored, body: new Uint8Array(stored.body) });
    expect(migrated.readMessages('a', 0, 10).map(plain)).toEqual([before, message('a', 1)].map(plain));
    const [layout] = await sql<
      { value: string }[]
    >`select value from ricochet_meta where name = 'layoutVersion'`;
    expect(Number(layout?.value)).toBe(POSTGRES_LAYOUT_VERSION);
    await migrated.close();
    // Through a fresh local copy too: both rows load.
    const reloaded = await open({ owner: 'a third broker' });
    expect(reloaded.readMessages('a', 0, 10).map(plain)).toEqual([before, message('a', 1)].map(plain));
    expect(reloaded.locateMessage('m-a-1')).toMatchObject({ topic: 'a', offset: 1 });
  }, 30_000);

  it('migrates a database of layout 1: its id-index table is dropped, and its messages are found by id', async () => {
    const { open, sql } = await storeDatabase(pg);
    const first = await open();
    void first.appendMessage(message('a', 0));
    await first.durable();
    await first.close();
    // As a broker of layout 1 left it.
    await sql`update ricochet_meta set value = 1 where name = 'layoutVersion'`;
    await sql`create table ricochet_message_ids (message_id text primary key, topic text not null, msg_offset bigint not null, value bytea not null)`;
    const migrated = await open({ owner: 'another broker' });
    expect(migrated.locateMessage('m-a-0')).toEqual({ topic: 'a', offset: 0, storedAt: 2 });
    const [layout] = await sql<
      { value: string }[]
    >`select value from ricochet_meta where name = 'layoutVersion'`;
    expect(Number(layout?.value)).toBe(POSTGRES_LAYOUT_VERSION);
    const [table] = await sql`select to_regclass('ricochet_message_ids') as name`;
    expect(table?.name).toBeNull();
  }, 30_000);

  it('prepares a queue whose tables are current without a lock on them: a read left open elsewhere does not hold it up', async () => {
    const { url, sql } = await storeDatabase(pg);
    await preparePostgresSchema(sql);
    // A broker paused in the middle of a read (its warm copy's snapshot, say) holds its tables'
    // share locks for as long as the pause; `alter table … if not exists` would wait for it.
    const read = holdOpenTransaction(url, async (tx) => {
      await tx`select count(*) from ricochet_lease`;
      await tx`select count(*) from ricochet_messages`;
    });
    // Waiting on a lock fails after 2 s rather than hanging the test.
    const preparer = postgres(url, { max: 1, onnotice: () => {}, connection: { lock_timeout: 2_000 } });
    try {
      await read.held;
      await preparePostgresSchema(preparer);
      // A fingerprint of other statements (an older release's) has them run again, and they do wait.
      await sql`update ricochet_meta set value = 0 where name = 'schemaFingerprint'`;
      await expect(preparePostgresSchema(preparer)).rejects.toThrow(/lock timeout/);
    } finally {
      await Promise.all([read.release(), preparer.end({ timeout: 5 })]);
    }
    await preparePostgresSchema(sql);
    const [fingerprint] = await sql<{ value: string }[]>`
      select value from ricochet_meta where name = 'schemaFingerprint'`;
    expect(Number(fingerprint?.value)).toBeGreaterThan(0);
  }, 30_000);

  it('reopens after a table that may arrive whole before it is read, and loads the tables after it', async () => {
    // About 30 KiB of messages, past the 16 KiB a COPY stream buffers before the loader reads it:
    // when it arrives in one read, postgres.js pauses the connection and the copy ends paused.
    const { open } = await storeDatabase(pg);
    const first = await open();
    const body = new Uint8Array(300).fill(7);
    for (let offset = 0; offset < 100; offset++) {
      void first.appendMessage({ ...message('a', offset), body });
      void first.putMessageLocation(`m-a-${offset}`, { topic: 'a', offset, storedAt: 2 });
    }
    await first.close();
    const second = await open({ owner: 'another broker' });
    expect(second.readMessages('a', 0, 200)).toHaveLength(100);
    expect(second.locateMessage('m-a-99')).toEqual({ topic: 'a', offset: 99, storedAt: 2 });
  }, 30_000);

  it('shows a write to reads once its promise resolves, and a delivery write to getDelivery at once', async () => {
    const { open, sql } = await storeDatabase(pg);
    const store = await open();
    const written = store.appendMessage(message('a', 0));
    expect(store.getMessage('a', 0)).toBeUndefined();
    const address = { group: 'g', topic: 'a', offset: 0 };
    void store.putDelivery(address, { consumer: 'push', state: initialPushState(), messageId: 'm-a-0' });
    expect(store.getDelivery(address)?.state.state).toBe('ready');
    await written;
    expect(store.getMessage('a', 0)?.offset).toBe(0);
    expect((await sql`select count(*)::int as n from ricochet_messages`)[0]?.n).toBe(1);
    void store.deleteDelivery(address);
    expect(store.getDelivery(address)).toBeUndefined();
    await store.durable();
    expect((await sql`select count(*)::int as n from ricochet_deliveries`)[0]?.n).toBe(0);
  });

  it('applies retention after an append of the same message queued before it, even within one transaction', async () => {
    const { open, sql } = await storeDatabase(pg);
    const store = await open();
    const kept = message('a', 1);
    const expired = message('a', 0);
    const history = {
      group: 'g',
      topic: 'a',
      offset: 0,
      deliveryAttempt: 1,
      consumer: 'push',
      deliveredAt: 1,
      settledAt: 2,
      result: 'committed',
      lease: 1,
    } as const;
    // The engine never expires a message whose index entry or history is not committed yet
    // (BrokerStore.deleteExpiredMessage); its append may still be in the same transaction.
    void store.putMessageLocation(expired.messageId, { topic: 'a', offset: 0, storedAt: 2 });
    void store.appendHistory(expired.messageId, history);
    await store.durable();
    // One turn, so one transaction.
    void store.appendMessage(expired);
    void store.appendMessage(kept);
    void store.deleteExpiredMessage({ topic: 'a', offset: 0, messageId: expired.messageId });
    await store.durable();
    expect(store.readMessages('a', 0, 10).map((m) => m.offset)).toEqual([1]);
    expect(store.locateMessage(expired.messageId)).toBeUndefined();
    expect(store.readHistory(expired.messageId)).toEqual([]);
    const counts = await sql`select
      (select count(*)::int from ricochet_messages) as messages,
      (select count(*)::int from ricochet_history) as history`;
    expect(counts[0]).toEqual({ messages: 1, history: 0 });
  });

  it('writes a batch larger than one statement takes, every byte value intact, and deletes it the same way', async () => {
    const { open, sql } = await storeDatabase(pg);
    const store = await open();
    const everyByte = Uint8Array.from({ length: 256 }, (_, value) => value);
    const count = 5_001; // one past a statement's rows: two statements per table
    for (let offset = 0; offset < count; offset++) {
      void store.appendMessage({ ...message('a"\\{,}', offset), body: everyByte });
    }
    await store.durable();
    expect((await sql`select count(*)::int as n from ricochet_messages`)[0]?.n).toBe(count);
    await store.close();
    const reopened = await open({ owner: 'another broker' });
    const last = reopened.readMessages('a"\\{,}', count - 1, 1)[0];
    expect(last?.offset).toBe(count - 1);
    expect([...(last?.body ?? [])]).toEqual([...everyByte]);
    for (let offset = 0; offset < count; offset++) {
      void reopened.deleteExpiredMessage({ topic: 'a"\\{,}', offset, messageId: `m-a"\\{,}-${offset}` });
    }
    await reopened.durable();
    expect((await sql`select count(*)::int as n from ricochet_messages`)[0]?.n).toBe(0);
  }, 60_000);

  it('refuses a database written by a newer layout before reading or writing anything', async () => {
    const { open, sql } = await storeDatabase(pg);
    await (await open()).close();
    await sql`update ricochet_meta set value = 99 where name = 'layoutVersion'`;
    await expect(open()).rejects.toBeInstanceOf(LayoutVersionError);
  });
});
