import { describe, expect, it } from 'vitest';
import type { AdminApi } from './support/admin.js';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { startBroker, type TestBroker } from './support/test-broker.js';

/** Every page of a listing, `limit` at a time, following each cursor until it is `null`. */
async function allPages<T>(
  list: (query: string) => Promise<{ items: readonly T[]; cursor: string | null }>,
  limit: number,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  // Bounded so a cursor that never ends fails the test instead of hanging it.
  while (pages < 100) {
    const page = await list(`?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    pages++;
    expect(page.items.length).toBeLessThanOrEqual(limit);
    items.push(...page.items);
    if (page.cursor === null) break;
    // Opaque, and safe in a query string as it is, even after a `%DLQ%…` topic.
    expect(encodeURIComponent(page.cursor)).toBe(page.cursor);
    cursor = page.cursor;
  }
  return { items, pages };
}

const topicPages = (admin: AdminApi) => async (query: string) => {
  const { topics, cursor } = await admin.listTopics(query);
  return { items: topics, cursor };
};

const groupPages = (admin: AdminApi) => async (query: string) => {
  const { groups, cursor } = await admin.listGroups(query);
  return { items: groups, cursor };
};

/**
 * Five topics (two by PUT, two on first send, one DLQ) and three groups (two by PUT, one on first
 * receive), with every message settled so the stats hold still while the test reads them.
 */
async function brokerWithTopicsAndGroups(): Promise<TestBroker> {
  const broker = await startBroker();
  try {
    await broker.admin.putTopic('ledger', { type: 'fifo' });
    await broker.admin.putTopic('reminders', { type: 'delay' });
    await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 0 });
    await broker.admin.putGroup('ops', { startFrom: 'earliest' });
    // `audit` exists from its first receive on, starting at the latest offset of `orders`.
    await using audit = await startSimpleConsumer(broker.endpoint, {
      group: 'audit',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    expect(await audit.receive(1, 30_000)).toEqual([]);

    await using producer = await startProducer(broker.endpoint);
    await producer.send({ topic: 'orders', body: 'o1' });
    await producer.send({ topic: 'orders', body: 'o2' });
    await producer.send({ topic: 'payments', body: 'poison' });

    const audited = [];
    for (let tries = 0; tries < 10 && audited.length < 2; tries++) {
      const received = await audit.receive(2 - audited.length, 30_000);
      for (const message of received) await audit.ack(message);
      audited.push(...received);
    }
    expect(audited).toHaveLength(2);

    // maxRetries 0: the first failure moves the message to `%DLQ%billing`.
    await using billing = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { payments: '*' },
    });
    const [poison] = await billing.receive(1, 30_000);
    if (!poison) throw new Error('billing received nothing');
    await billing.changeInvisibleDuration(poison, 0);
    // Receiving it from the DLQ is waiting for the move.
    await using ops = await startSimpleConsumer(broker.endpoint, {
      group: 'ops',
      subscriptions: { '%DLQ%billing': '*' },
      awaitDurationMs: 10_000,
    });
    const [dead] = await ops.receive(1, 30_000);
    if (!dead) throw new Error('nothing reached the DLQ');
    await ops.ack(dead);
    return broker;
  } catch (error) {
    await broker.close();
    throw error;
  }
}

describe('admin listings: GET /v1/topics and GET /v1/groups page by name with an opaque cursor', () => {
  it('lists every topic and group once, in name order, described as the single GET describes it', async () => {
    await using broker = await brokerWithTopicsAndGroups();
    const { admin } = broker;

    const topics = await allPages(topicPages(admin), 2);
    expect(topics.pages).toBe(3);
    expect(topics.items.map((topic) => topic.name)).toEqual([
      '%DLQ%billing',
      'ledger',
      'orders',
      'payments',
      'reminders',
    ]);
    for (const topic of topics.items) expect(await admin.getTopic(topic.name)).toEqual(topic);
    const byTopic = new Map(topics.items.map((topic) => [topic.name, topic]));
    expect(byTopic.get('orders')?.stats).toEqual({ firstOffset: 0, nextOffset: 2, messages: 2 });
    expect(byTopic.get('%DLQ%billing')?.stats).toEqual({ firstOffset: 0, nextOffset: 1, messages: 1 });
    expect(byTopic.get('ledger')).toMatchObject({
      config: { type: 'fifo' },
      stats: { firstOffset: 0, nextOffset: 0, messages: 0 },
    });

    const groups = await allPages(groupPages(admin), 2);
    expect(groups.pages).toBe(2);
    expect(groups.items.map((group) => group.name)).toEqual(['audit', 'billing', 'ops']);
    for (const group of groups.items) expect(await admin.getGroup(group.name)).toEqual(group);
    expect(groups.items[0]?.stats).toMatchObject({ committed: 2, inflight: 0, ready: 0 });
    expect(groups.items[1]?.stats).toMatchObject({ dlq: 1, committed: 0, inflight: 0 });

    // One page holds everything under the default limit, and then there is no next page.
    expect(await admin.listTopics()).toEqual({ topics: topics.items, cursor: null });
    expect(await admin.listGroups('?cursor=')).toEqual({ groups: groups.items, cursor: null });
  });

  it('continues strictly after the cursor and answers an empty last page past the end', async () => {
    await using broker = await startBroker();
    for (const name of ['a', 'b', 'c']) await broker.admin.putGroup(name, {});
    const first = await broker.admin.listGroups('?limit=2');
    expect(first.groups.map((group) => group.name)).toEqual(['a', 'b']);
    const second = await broker.admin.listGroups(`?limit=2&cursor=${first.cursor}`);
    expect(second).toMatchObject({ groups: [{ name: 'c' }], cursor: null });
    // An exact fit still ends with `cursor: null`, not with a cursor to an empty page.
    expect((await broker.admin.listGroups('?limit=3')).cursor).toBeNull();
    expect(await broker.admin.listTopics()).toEqual({ topics: [], cursor: null });
  });

  it.each(['/v1/topics', '/v1/groups'])(
    'answers bad paging values on %s with 400 BAD_REQUEST',
    async (path) => {
      await using broker = await startBroker();
      for (const query of [
        '?limit=0',
        '?limit=1001',
        '?limit=x',
        '?limit=1.5',
        '?cursor=%25DLQ%25',
        '?cursor=a=',
      ]) {
        const response = await broker.admin.fetch('GET', `${path}${query}`);
        expect({ query, status: response.status }).toEqual({ query, status: 400 });
        expect(await response.json()).toMatchObject({ error: { code: 400, name: 'BAD_REQUEST' } });
      }
      expect((await broker.admin.fetch('GET', `${path}?limit=1000`)).status).toBe(200);
    },
  );
});
