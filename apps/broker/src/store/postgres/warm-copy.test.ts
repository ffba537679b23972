import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres, { type Sql } from 'postgres';
import { describe, expect, it, vi } from 'vitest';
import type { BrokerStore } from '../broker-store.js';
import { openLmdbStore } from '../lmdb-store.js';
import type { HistoryRecord, StoredMessage } from '../records.js';
import { LAYOUT_V1_SAMPLE as SAMPLE } from '../schema/layout-v1-sample.test-support.js';
import { readContents, writeContents } from '../schema/store-contents.test-support.js';
import { postgresForThisFile } from './postgres-server.test-support.js';
import { openPostgresStore } from './postgres-store.js';
import { FEED_PATH, FeedHub, followFeed, type StandbyFeedOptions } from './standby-feed.js';
import { keepWarm, type WarmPace } from './standing-by.js';
import { type FeedApplied, WarmCopy } from './warm-copy.js';
import type { CommittedWrites } from './write-pipeline.js';

const pg = postgresForThisFile();

async function freshDatabase(
  standbyFeed?: StandbyFeedOptions,
): Promise<{ url: string; sql: Sql; owner: BrokerStore }> {
  const url = await pg.createDatabase('warm');
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  pg.cleanup(() => sql.end({ timeout: 5 }));
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-warm-owner-'));
  const owner = await openPostgresStore({
    url,
    cacheDir: join(dir, 'cache'),
    owner: 'owner',
    ...(standbyFeed ? { standbyFeed } : {}),
  });
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

/** The sample, then 50 consumed messages on topic `stream`, and a warm copy that loaded them. */
async function loadedStream(sql: Sql, owner: BrokerStore): Promise<{ copied: BrokerStore; warm: WarmCopy }> {
  await writeContents(owner, SAMPLE);
  void owner.putTopic({ name: 'stream', config: { type: 'normal' }, createdAt: T0 });
  await appendConsumed(owner, 'stream', 0, 50);
  const copied = scratchCopy();
  const warm = new WarmCopy(copied);
  await warm.catchUp(sql);
  return { copied, warm };
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
    const { copied: warmCopy, warm } = await loadedStream(sql, owner);
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
    const { warming, firstLoad, loads } = warmInBackground(copy, sql, { busyMs: 10, idleMs: 10 });
    await firstLoad;
    await appendConsumed(owner, 'orders', 6, 3);
    await warming.stop();
    expect(copy.loaded).toBe(true);
    expect(loads).toHaveLength(1);
  }, 60_000);

  it('steps at the following pace while the copy follows the feed, and at once when asked', async () => {
    const { sql, owner } = await freshDatabase();
    await writeContents(owner, SAMPLE);
    const copy = new WarmCopy(scratchCopy());
    const steps = vi.spyOn(copy, 'catchUp');
    // Without the feed it would step every 10 ms; following it, once an hour.
    const { warming, firstLoad } = warmInBackground(
      copy,
      sql,
      { busyMs: 10, idleMs: 10, followingMs: 3_600_000 },
      () => true,
    );
    await firstLoad;
    await appendConsumed(owner, 'orders', 6, 3);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(steps).toHaveBeenCalledTimes(1);
    warming.catchUpNow();
    await vi.waitFor(() => expect(steps).toHaveBeenCalledTimes(2));
    await warming.stop();
    expect(copy.rowSeq).toBe(await highestSeq(sql));
  }, 60_000);

  it('follows the owner’s feed: every write applied as it commits, none left to read from the database', async () => {
    const feed = await servedFeed();
    const { sql, owner } = await freshDatabase(feed.options);
    const { copied, warm } = await loadedStream(sql, owner);
    const follower = feed.follow(warm);
    await follower.open;
    const lastOffsets = vi.spyOn(copied, 'lastOffset');

    // Sends with their history (one statement a batch), retention (a transaction), a topic of its
    // own, a history row and a message written again under their keys.
    await appendConsumed(owner, 'stream', 50, 30);
    await expire(owner, 'stream', 40, [3, 7]);
    void owner.putTopic({ name: 'late', config: { type: 'normal' }, createdAt: T0 + 5 });
    await appendConsumed(owner, 'late', 0, 5);
    void owner.appendHistory('stream-60', { ...committed('stream', 60), result: 'released' });
    void owner.appendMessage({ ...message('stream', 50), properties: { redriven: 'yes' } });
    await owner.durable();
    await follower.caughtUpTo(await highestSeq(sql));

    expect(follower.results.filter((result) => result === 'applied').length).toBeGreaterThan(3);
    expect(follower.results).not.toContain('gap');
    // Each topic's last offset is read from the copy once, not for every batch that appends to it.
    expect(lastOffsets.mock.calls.map(([topic]) => topic).sort()).toEqual(['late', 'stream']);
    expect(copied.getMessage('stream', 50)?.properties).toEqual({ redriven: 'yes' });
    expect(copied.readHistory('stream-60')).toMatchObject([{ result: 'released' }]);
    expect(copied.locateMessage('late-4')).toMatchObject({ topic: 'late', offset: 4 });
    // The feed brought everything: the database holds nothing the copy has not.
    expect(await warm.catchUp(sql)).toBe(0);
    follower.stop();
    await expectCompletesAsALoad(sql, warm, copied);
  }, 60_000);

  it('applies the batches that arrive close together in one commit of the copy, and all of them when settled', async () => {
    const feed = await servedFeed();
    const { sql, owner } = await freshDatabase(feed.options);
    await writeContents(owner, SAMPLE);
    void owner.putTopic({ name: 'stream', config: { type: 'normal' }, createdAt: T0 });
    await owner.durable();
    const copied = scratchCopy();
    // A delay no test waits out: only the batches' count or settling applies them.
    const warm = new WarmCopy(copied, { delayMs: 3_600_000 });
    await warm.catchUp(sql);
    const follower = feed.follow(warm);
    await follower.open;
    const commits = vi.spyOn(copied, 'committed');
    const arrivals = vi.spyOn(warm, 'apply');
    // Five commits of the owner, so five batches of the feed, one after another.
    for (let batch = 0; batch < 5; batch++) await appendConsumed(owner, 'stream', batch * 4, 4);
    await vi.waitFor(() => expect(arrivals).toHaveBeenCalledTimes(5));
    expect(follower.results).toEqual([]);
    expect(copied.readMessages('stream', 0, 100)).toHaveLength(0);
    await warm.settled();
    await follower.until(() => follower.results.length === 5);
    expect(follower.results).toEqual(['applied', 'applied', 'applied', 'applied', 'applied']);
    expect(commits).toHaveBeenCalledTimes(1);
    expect(copied.readMessages('stream', 0, 100)).toHaveLength(20);
    expect(warm.rowSeq).toBe(await highestSeq(sql));
    follower.stop();
    await expectCompletesAsALoad(sql, warm, copied);
  }, 60_000);

  it('reads from the database what the feed missed, then follows it again', async () => {
    const feed = await servedFeed();
    const { sql, owner } = await freshDatabase(feed.options);
    await writeContents(owner, SAMPLE);
    const copied = scratchCopy();
    const warm = new WarmCopy(copied);
    await warm.catchUp(sql);
    // The second batch is lost on the way (a standby cut off for falling behind loses what was sent).
    const follower = feed.follow(warm, { drop: 2 });
    await follower.open;
    // The sample's orders end at offset 2.
    for (let batch = 0; batch < 4; batch++) await appendConsumed(owner, 'orders', 3 + batch * 5, 5);
    await follower.until(() => follower.results.length === 3);
    // Found missing at the next batch: it is not applied, nor any after it, until the copy reads
    // from the database what it missed (three batches of five messages, each with its history).
    expect(follower.results).toEqual(['applied', 'gap', 'gap']);
    expect(copied.readMessages('orders', 8, 100)).toHaveLength(0);
    expect(await warm.catchUp(sql)).toBe(30);
    await appendConsumed(owner, 'orders', 23, 5);
    await follower.caughtUpTo(await highestSeq(sql));
    expect(follower.results).toEqual(['applied', 'gap', 'gap', 'applied']);
    follower.stop();
    await expectCompletesAsALoad(sql, warm, copied);
  }, 60_000);
});

/**
 * Keep `copy` warm in the background at `pace` (`keepWarm`), following a feed while `following`
 * says so: `firstLoad` resolves once the first load is done, and `loads` holds each load's time.
 */
function warmInBackground(copy: WarmCopy, sql: Sql, pace: WarmPace, following?: () => boolean) {
  const loads: number[] = [];
  let loaded!: () => void;
  const firstLoad = new Promise<void>((resolve) => {
    loaded = resolve;
  });
  const onLoaded = (elapsedMs: number) => {
    loads.push(elapsedMs);
    loaded();
  };
  const warming = keepWarm(copy, sql, pace, { onLoaded }, following);
  return { warming, firstLoad, loads };
}

/** Complete `warm`, and find in `copied` what a broker that found the lease free loads, in one go. */
async function expectCompletesAsALoad(sql: Sql, warm: WarmCopy, copied: BrokerStore): Promise<void> {
  await warm.complete(sql);
  const cold = scratchCopy();
  await new WarmCopy(cold).complete(sql);
  expect(readContents(copied)).toEqual(readContents(cold));
}

/** The highest `seq` of the followed tables: where a copy that holds everything stands. */
async function highestSeq(sql: Sql): Promise<number> {
  const [row] = await sql<{ seq: string | null }[]>`
    select greatest((select max(seq) from ricochet_history), (select max(seq) from ricochet_messages))::text as seq`;
  return Number(row?.seq ?? 0);
}

/**
 * The owner's feed served over HTTP on 127.0.0.1 as its route serves it (`cluster/standby/feed-route.ts`
 * does the peer token's check), and a follower that applies each batch to a copy.
 */
async function servedFeed() {
  const hub = new FeedHub();
  const server = createServer((request, response) => {
    if (request.url !== FEED_PATH || request.headers.authorization !== 'Bearer peer-secret') {
      response.writeHead(401).end();
      return;
    }
    response.writeHead(200).flushHeaders();
    hub.follow(Number(request.headers['ricochet-queue']), response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  pg.cleanup(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const options: StandbyFeedOptions = {
    requestHeaders: (queue) => ({ authorization: 'Bearer peer-secret', 'ricochet-queue': String(queue) }),
    hub,
  };
  return {
    options,
    /** Follow the feed into `copy`, every batch's result recorded; `drop` loses that batch (1 is the first). */
    follow(copy: WarmCopy, { drop }: { drop?: number } = {}) {
      const results: FeedApplied[] = [];
      let received = 0;
      const waiters: (() => void)[] = [];
      let opened!: () => void;
      const open = new Promise<void>((resolve) => {
        opened = resolve;
      });
      const following = followFeed(0, options, {
        batch: async (batch: CommittedWrites) => {
          received++;
          if (received === drop) return 'held';
          const result = await copy.apply(batch);
          results.push(result);
          for (const wake of waiters.splice(0)) wake();
          return result;
        },
        connected: (isOpen) => {
          if (isOpen) opened();
        },
      });
      following.ownerAt(url);
      pg.cleanup(() => following.stop());
      return {
        results,
        /** Resolves once the hub has this follower. */
        open: open.then(async () => {
          // The route answered: the hub holds the stream from the same turn.
          if (!hub.followed(0)) throw new Error('the hub has no follower');
        }),
        /** Resolves once `done` holds, looked at after each batch. */
        async until(done: () => boolean): Promise<void> {
          // Bounded by the test's timeout: each batch wakes it once.
          while (!done()) await new Promise<void>((resolve) => waiters.push(resolve));
        },
        /** Resolves once the copy stands at `seq`. */
        caughtUpTo(seq: number): Promise<void> {
          return this.until(() => copy.rowSeq >= seq);
        },
        stop: () => following.stop(),
      };
    },
  };
}
