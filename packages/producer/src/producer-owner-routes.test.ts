import { FakeBroker, twoOwnerQueueMap } from '@ricochet/client-testkit';
import { type QueueMapFrame, queueOfMessage } from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { producersPerTest } from './producer.fixture.js';
import type { Producer } from './producer.js';

/**
 * DESIGN.md §9, docs/protocol/README.md#queue-map: a producer asks for the queue map and sends
 * each message to its queue's owner; without a map, or on a stale route, its messages go to the
 * `endpoint` broker as they always did.
 */
const { brokers, createProducer } = producersPerTest();

/** The second broker of a test, the owner of queue 1; closed after each test. */
const owners: FakeBroker[] = [];
afterEach(async () => {
  await Promise.all(owners.splice(0).map((owner) => owner.close()));
});

/** Ids of 32 hex digits, `count` of them in each of the two queues. */
function idsByQueue(count: number): [string[], string[]] {
  const byQueue: [string[], string[]] = [[], []];
  for (let n = 0; byQueue[0].length < count || byQueue[1].length < count; n++) {
    const id = n.toString(16).padStart(32, '0');
    const inQueue = byQueue[queueOfMessage({ messageId: id }, 2) as 0 | 1];
    if (inQueue.length < count) inQueue.push(id);
  }
  return byQueue;
}

/** A home broker that grants the map and tells `map` on each session, and the owner of queue 1. */
async function grantingBrokers(fields: Partial<QueueMapFrame> = {}) {
  const home = await brokers.start({ welcomeExtra: { features: ['queueMap'] } });
  const owner = await FakeBroker.start();
  owners.push(owner);
  const tellMap = async () => {
    const session = await home.waitForSession(home.sessions.length + 1);
    session.send(twoOwnerQueueMap(home, owner, fields));
  };
  return { home, owner, tellMap };
}

/**
 * Send `messageId` (of the owner's queue) until a copy reaches the owner: the producer routes to an
 * owner once its session there is open, which no event of the producer tells. Each send succeeds,
 * through the endpoint broker until then.
 */
async function untilRoutedToOwner(producer: Producer, owner: FakeBroker, messageId: string): Promise<void> {
  await expect
    .poll(async () => {
      await producer.send({ topic: 'orders', body: 'probe', messageId });
      return sentIds(owner).length;
    })
    .toBeGreaterThan(0);
}

const sentIds = (broker: FakeBroker) =>
  broker.framesOf('send').flatMap((frame) => frame.messages.map((message) => message.messageId));

describe('a producer routing to queue owners', () => {
  it('asks for the map, opens a session with each owner, and sends each message to its queue’s owner', async () => {
    const { home, owner, tellMap } = await grantingBrokers();
    const producer = createProducer(home.endpoint);
    const told = tellMap();
    await producer.start();
    await told;
    const [home0, owner1] = idsByQueue(6);
    await untilRoutedToOwner(producer, owner, owner1.shift() as string);
    expect(home.sessions[0]?.hello.features).toEqual(['queueMap']);
    // The session with an owner asks for nothing: the map comes from the endpoint broker only.
    expect(owner.sessions[0]?.hello.features).toBeUndefined();
    const before = { home: sentIds(home).length, owner: sentIds(owner).length };
    const results = await Promise.all(
      [...home0, ...owner1].map((messageId) => producer.send({ topic: 'orders', body: 'x', messageId })),
    );
    expect(results.map((result) => result.messageId)).toEqual([...home0, ...owner1]);
    expect(sentIds(home).slice(before.home)).toEqual(home0);
    expect(sentIds(owner).slice(before.owner)).toEqual(owner1);
  });

  it('follows a stale route: a send whose owner session drops goes again through the endpoint broker, same id, outside maxAttempts', async () => {
    const { home, owner, tellMap } = await grantingBrokers();
    const producer = createProducer(home.endpoint, { maxAttempts: 1 });
    const told = tellMap();
    await producer.start();
    await told;
    const [, [probe, stale]] = idsByQueue(2);
    await untilRoutedToOwner(producer, owner, probe as string);
    // The owner takes the next send and drops the connection before answering (it stopped, or died).
    owner.on('send', (_frame, session) => session.drop());
    const result = await producer.send({ topic: 'orders', body: 'x', messageId: stale as string });
    expect(result.messageId).toBe(stale);
    expect(sentIds(owner).at(-1)).toBe(stale);
    expect(sentIds(home).at(-1)).toBe(stale);
  });

  it('retires the session with a broker the next map no longer names, and sends its queue home', async () => {
    const { home, owner, tellMap } = await grantingBrokers();
    const producer = createProducer(home.endpoint);
    const told = tellMap();
    await producer.start();
    await told;
    const [, [probe, after]] = idsByQueue(2);
    await untilRoutedToOwner(producer, owner, probe as string);
    const ownerSession = owner.sessions[0];
    // Queue 1 moved to the endpoint broker (the owner left, say): the map tells so.
    home.sessions[0]?.send(twoOwnerQueueMap(home, owner, { owners: ['home', 'home'] }));
    expect((await ownerSession?.closed)?.code).toBe(1000);
    await producer.send({ topic: 'orders', body: 'x', messageId: after as string });
    expect(sentIds(home).at(-1)).toBe(after);
    expect(sentIds(owner)).not.toContain(after);
  });

  it('sends everything to the endpoint broker when the map names a placement it does not know', async () => {
    const { home, owner, tellMap } = await grantingBrokers({ placement: 'murmur3-something-newer' });
    const producer = createProducer(home.endpoint);
    const told = tellMap();
    await producer.start();
    await told;
    const [home0, owner1] = idsByQueue(3);
    for (const messageId of [...home0, ...owner1])
      await producer.send({ topic: 'orders', body: 'x', messageId });
    expect(sentIds(home)).toEqual([...home0, ...owner1]);
    expect(owner.connectionCount).toBe(0);
  });

  it('works as before with a broker that predates the feature (no welcome.features, no map)', async () => {
    const home = await brokers.start();
    const producer = createProducer(home.endpoint);
    await producer.start();
    expect(home.sessions[0]?.hello.features).toEqual(['queueMap']);
    const [home0, owner1] = idsByQueue(3);
    for (const messageId of [...home0, ...owner1])
      await producer.send({ topic: 'orders', body: 'x', messageId });
    expect(sentIds(home)).toEqual([...home0, ...owner1]);
  });

  it('with routeToOwners false, says today’s hello: no features', async () => {
    const home = await brokers.start({ welcomeExtra: { features: ['queueMap'] } });
    const producer = createProducer(home.endpoint, { routeToOwners: false });
    await producer.start();
    expect(home.sessions[0]?.hello).not.toHaveProperty('features');
    await producer.send({ topic: 'orders', body: 'x' });
    expect(home.framesOf('send')).toHaveLength(1);
  });
});
