import type { ClientFrame, QueueMapFrame } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import type { CreditLender, MessagingService } from '../engine/index.js';
import { type MemoryChannel, openMemorySession } from './memory-session.test-support.js';
import type { QueueMapFeed } from './queue-map-feed.js';

/** A feed whose map the test sets, telling its watchers as the cluster's does. */
class TestFeed implements QueueMapFeed {
  map: QueueMapFrame | undefined = mapWith(['a', 'b']);
  readonly #listeners = new Set<() => void>();
  current() {
    return this.map;
  }
  onChange(listener: () => void) {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }
  get watchers() {
    return this.#listeners.size;
  }
  change(owners: (string | null)[]) {
    this.map = mapWith(owners);
    for (const listener of this.#listeners) listener();
  }
}

function mapWith(owners: (string | null)[]): QueueMapFrame {
  return {
    type: 'queueMap',
    placement: 'fnv1a-group-or-id',
    queues: owners.length,
    broker: 'a',
    owners,
    endpoints: { a: 'ws://127.0.0.1:1', b: 'ws://127.0.0.1:2' },
  };
}

/** The subscribe requests an engine was asked, and the id it answers each with. */
function subscribingEngine() {
  const requests: { scope?: string | undefined; lender?: CreditLender | undefined }[] = [];
  const engine = {
    metrics: { rejected: () => {} },
    endSubscriptions: () => {},
    subscribe: (request: { scope?: string | undefined; lender?: CreditLender | undefined }) => {
      requests.push(request);
      return requests.length;
    },
  } as unknown as MessagingService;
  return { engine, requests };
}

function openSession(feed: QueueMapFeed | undefined, engine: MessagingService = subscribingEngine().engine) {
  return openMemorySession(engine, { queueMap: feed });
}

/** The answer to request 7, once the session sent it. */
async function answerOf(channel: MemoryChannel) {
  for (let turn = 0; turn < 100; turn++) {
    const answer = channel.sent.find((frame) => 'id' in frame && frame.id === 7);
    if (answer !== undefined) return answer;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('request 7 was not answered');
}

describe('the queueMap feature of hello', () => {
  it('is granted to a client that asks, which is told the map at once and at every change until it closes', () => {
    const feed = new TestFeed();
    const { channel, session } = openSession(feed);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['queueMap', 'somethingNewer'] });
    expect(channel.sent).toEqual([
      expect.objectContaining({ type: 'welcome', features: ['queueMap'] }),
      mapWith(['a', 'b']),
    ]);
    feed.change(['b', null]);
    expect(channel.sent.at(-1)).toEqual(mapWith(['b', null]));
    session.close();
    expect(feed.watchers).toBe(0);
  });

  it('is not granted to a client that does not ask (today’s hello): no features, no queueMap frame', () => {
    const feed = new TestFeed();
    const { channel } = openSession(feed);
    channel.receive({ type: 'hello', protocolVersion: 1 });
    feed.change(['b', 'b']);
    expect(channel.sent).toHaveLength(1);
    expect(channel.sent[0]).toMatchObject({ type: 'welcome' });
    expect(channel.sent[0]).not.toHaveProperty('features');
    expect(feed.watchers).toBe(0);
  });

  it('is not granted by a broker without a map (one broker, or a transport without a stream)', () => {
    const { channel } = openSession(undefined);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['queueMap'] });
    expect(channel.sent).toHaveLength(1);
    expect(channel.sent[0]).not.toHaveProperty('features');
  });

  it('waits for the first map when the broker has none yet', () => {
    const feed = new TestFeed();
    feed.map = undefined;
    const { channel } = openSession(feed);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['queueMap'] });
    expect(channel.sent.map((frame) => frame.type)).toEqual(['welcome']);
    feed.change(['a', 'a']);
    expect(channel.sent.at(-1)).toEqual(mapWith(['a', 'a']));
  });
});

describe('the ownedSubscriptions feature of hello', () => {
  const subscribe = (scope?: 'owned'): ClientFrame => ({
    type: 'subscribe',
    id: 7,
    group: 'billing',
    subscriptions: { orders: '*' },
    maxCachedMessages: 8,
    ...(scope === undefined ? {} : { scope }),
  });
  it('is granted beside queueMap by a broker with a map, and lets subscribe ask for the owned scope', async () => {
    const { engine, requests } = subscribingEngine();
    const { channel } = openSession(new TestFeed(), engine);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['queueMap', 'ownedSubscriptions'] });
    expect(channel.sent[0]).toMatchObject({ type: 'welcome', features: ['queueMap', 'ownedSubscriptions'] });
    channel.receive(subscribe('owned'));
    expect(await answerOf(channel)).toEqual({ type: 'subscribed', id: 7, subscriptionId: 1 });
    expect(requests).toEqual([expect.objectContaining({ scope: 'owned' })]);
  });

  it('is granted alone, to the session a consumer opens with another owner (no map asked for)', () => {
    const { channel } = openSession(new TestFeed());
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['ownedSubscriptions'] });
    expect(channel.sent).toEqual([
      expect.objectContaining({ type: 'welcome', features: ['ownedSubscriptions'] }),
    ]);
  });

  it('is not granted by a broker without a map, which refuses an owned-scope subscribe with 400', async () => {
    const { engine, requests } = subscribingEngine();
    const { channel } = openSession(undefined, engine);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['queueMap', 'ownedSubscriptions'] });
    expect(channel.sent[0]).not.toHaveProperty('features');
    channel.receive(subscribe('owned'));
    expect(await answerOf(channel)).toMatchObject({ type: 'error', id: 7, code: 400 });
    expect(requests).toEqual([]);
  });

  it('is needed for the owned scope even where it would be granted: today’s subscribe spans every queue', async () => {
    const { engine, requests } = subscribingEngine();
    const { channel } = openSession(new TestFeed(), engine);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['queueMap'] });
    channel.receive(subscribe('owned'));
    expect(await answerOf(channel)).toMatchObject({ type: 'error', id: 7, code: 400 });
    channel.receive({ ...subscribe(), id: 8 } as ClientFrame);
    for (let turn = 0; turn < 100 && requests.length === 0; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(requests).toEqual([expect.objectContaining({ scope: undefined })]);
  });
});

describe('the creditLending feature of hello', () => {
  const subscribe = (id: number, scope?: 'owned'): ClientFrame => ({
    type: 'subscribe',
    id,
    group: 'billing',
    subscriptions: { orders: '*' },
    maxCachedMessages: 8,
    ...(scope === undefined ? {} : { scope }),
  });
  const settle = async (requests: readonly unknown[], count: number) => {
    for (let turn = 0; turn < 100 && requests.length < count; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  it('is granted with ownedSubscriptions: an owned-scope subscription asks its client for credit and gives it back', async () => {
    const { engine, requests } = subscribingEngine();
    const { channel } = openSession(new TestFeed(), engine);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['ownedSubscriptions', 'creditLending'] });
    expect(channel.sent[0]).toMatchObject({
      type: 'welcome',
      features: ['ownedSubscriptions', 'creditLending'],
    });
    channel.receive(subscribe(7, 'owned'));
    channel.receive(subscribe(8));
    await settle(requests, 2);
    const [owned, everywhere] = requests;
    // A subscription over every queue spends the credit it is granted, as before.
    expect(everywhere?.lender).toBeUndefined();
    owned?.lender?.wanted(1, 12, true);
    owned?.lender?.returned(1, 3);
    expect(channel.sent.slice(-2)).toEqual([
      { type: 'creditWanted', subscriptionId: 1, ready: 12, late: true },
      { type: 'creditReturned', subscriptionId: 1, credits: 3 },
    ]);
  });

  it('is not granted without ownedSubscriptions, and without it an owned-scope subscription keeps its credit', async () => {
    const alone = openSession(new TestFeed());
    alone.channel.receive({ type: 'hello', protocolVersion: 1, features: ['creditLending'] });
    expect(alone.channel.sent[0]).not.toHaveProperty('features');

    const { engine, requests } = subscribingEngine();
    const { channel } = openSession(new TestFeed(), engine);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['ownedSubscriptions'] });
    channel.receive(subscribe(7, 'owned'));
    await settle(requests, 1);
    expect(requests).toEqual([expect.objectContaining({ scope: 'owned' })]);
    expect(requests[0]?.lender).toBeUndefined();
  });
});

describe('the ownedReceives feature of hello', () => {
  const receive = (scope?: 'owned'): ClientFrame => ({
    type: 'receive',
    id: 7,
    group: 'billing',
    subscriptions: { orders: '*' },
    maxMessages: 32,
    invisibleDurationMs: 30_000,
    awaitDurationMs: 0,
    ...(scope === undefined ? {} : { scope }),
  });
  /** The receive requests an engine was asked; it leases nothing. */
  function receivingEngine() {
    const requests: { scope?: string | undefined }[] = [];
    const engine = {
      metrics: { rejected: () => {} },
      endSubscriptions: () => {},
      receive: async (request: { scope?: string | undefined }) => {
        requests.push(request);
        return [];
      },
    } as unknown as MessagingService;
    return { engine, requests };
  }

  it('is granted by a broker with a map, alone or beside queueMap, and lets receive ask for the owned scope', async () => {
    const { engine, requests } = receivingEngine();
    const { channel } = openSession(new TestFeed(), engine);
    channel.receive({ type: 'hello', protocolVersion: 1, features: ['queueMap', 'ownedReceives'] });
    expect(channel.sent[0]).toMatchObject({ type: 'welcome', features: ['queueMap', 'ownedReceives'] });
    channel.receive(receive('owned'));
    expect(await answerOf(channel)).toEqual({ type: 'messages', id: 7, messages: [] });
    expect(requests).toEqual([expect.objectContaining({ scope: 'owned' })]);

    const alone = openSession(new TestFeed());
    alone.channel.receive({ type: 'hello', protocolVersion: 1, features: ['ownedReceives'] });
    expect(alone.channel.sent).toEqual([
      expect.objectContaining({ type: 'welcome', features: ['ownedReceives'] }),
    ]);
  });

  it('is not granted by a broker without a map, and is needed for the owned scope: else 400, nothing asked of the engine', async () => {
    for (const [feed, features] of [
      [undefined, ['queueMap', 'ownedReceives']],
      [new TestFeed(), ['queueMap', 'ownedSubscriptions']],
    ] as const) {
      const { engine, requests } = receivingEngine();
      const { channel } = openSession(feed, engine);
      channel.receive({ type: 'hello', protocolVersion: 1, features: [...features] });
      expect(channel.sent[0]).toMatchObject({ type: 'welcome' });
      expect((channel.sent[0] as { features?: string[] }).features ?? []).not.toContain('ownedReceives');
      channel.receive(receive('owned'));
      expect(await answerOf(channel)).toMatchObject({ type: 'error', id: 7, code: 400 });
      expect(requests).toEqual([]);
    }
  });
});
