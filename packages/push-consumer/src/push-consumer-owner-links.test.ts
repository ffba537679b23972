import { FakeBroker, twoOwnerQueueMap } from '@ricochet/client-testkit';
import type { QueueMapFrame } from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsumeResult } from './consume-result.js';
import { pushConsumersPerTest } from './push-consumer.fixture.js';

/**
 * docs/protocol/README.md#owned-subscriptions: a push consumer granted `ownedSubscriptions` and told
 * the queue map subscribes on every queue owner with `scope: 'owned'`, takes each owner's
 * deliveries and settles them on that owner's session, within one `maxCachedMessages` in all;
 * without the grant it subscribes as it always did.
 */
const { brokers, createConsumer } = pushConsumersPerTest();

/** The second broker of a test, owner of queue 1; closed after each test. */
const owners: FakeBroker[] = [];
afterEach(async () => {
  await Promise.all(owners.splice(0).map((owner) => owner.close()));
});

/** A home broker that grants both features and tells `map` on its first session, and an owner that grants ownedSubscriptions. */
async function grantingBrokers() {
  const home = await brokers.start({ welcomeExtra: { features: ['queueMap', 'ownedSubscriptions'] } });
  const owner = await FakeBroker.start({ welcomeExtra: { features: ['ownedSubscriptions'] } });
  owners.push(owner);
  const tellMap = async (fields: Partial<QueueMapFrame> = {}) => {
    const session = await home.waitForSession(1);
    session.send(twoOwnerQueueMap(home, owner, fields));
  };
  return { home, owner, tellMap };
}

/** A listener that acknowledges every message and records its id. */
function acking() {
  const processed: string[] = [];
  return {
    processed,
    listener: async (message: { messageId: string }) => {
      processed.push(message.messageId);
      return ConsumeResult.SUCCESS;
    },
  };
}

describe('a push consumer taking deliveries from the queue owners', () => {
  it('subscribes owned-scope on its broker and on the other owner, and settles each delivery where it came from', async () => {
    const { home, owner, tellMap } = await grantingBrokers();
    const { processed, listener } = acking();
    const consumer = createConsumer(home.endpoint, {
      listener,
      maxCachedMessages: 8,
      concurrency: 2,
      // routeToOwners is the default.
    });
    const told = tellMap();
    await consumer.start();
    await told;
    expect(home.sessions[0]?.hello.features).toEqual(['queueMap', 'ownedSubscriptions', 'creditLending']);
    // The owner is subscribed on a session of its own, asking for the features of owned subscriptions only.
    const [atOwner] = await owner.waitForFrames('subscribe');
    expect(atOwner).toMatchObject({ group: 'billing', scope: 'owned' });
    expect(owner.sessions[0]?.hello.features).toEqual(['ownedSubscriptions', 'creditLending']);
    // The own subscription is made again owned-scope once the owner has its link.
    const subscribes = await home.waitForFrames('subscribe', 2);
    expect(subscribes[0]).not.toHaveProperty('scope');
    expect(subscribes[1]).toMatchObject({ scope: 'owned' });
    // maxCachedMessages is split over the two subscriptions.
    expect(atOwner?.maxCachedMessages).toBeLessThanOrEqual(4);
    expect(subscribes[1]?.maxCachedMessages).toBeLessThanOrEqual(4);

    const fromHome = FakeBroker.deliveredMessage({ messageId: 'a'.repeat(32) });
    const fromOwner = FakeBroker.deliveredMessage({ messageId: 'b'.repeat(32) });
    home.push(fromHome);
    owner.push(fromOwner);
    const [ownerAck] = await owner.waitForFrames('ack');
    const [homeAck] = await home.waitForFrames('ack');
    // Each broker was sent the result of its own delivery, and took it (its lease is gone).
    expect(ownerAck?.receiptHandles).toHaveLength(1);
    expect(homeAck?.receiptHandles).toHaveLength(1);
    expect(owner.leases.size).toBe(0);
    expect(home.leases.size).toBe(0);
    expect(processed.sort()).toEqual([fromHome.messageId, fromOwner.messageId].sort());
    // Each subscription was given back what it used, and never held more than its share.
    for (const subscription of [...owner.subscriptions, ...home.subscriptions]) {
      expect(subscription.maxUnsettled).toBeLessThanOrEqual(4);
    }
  });

  it('keeps its own subscription over every queue until the owner answered its owned-scope subscribe', async () => {
    const { home, owner, tellMap } = await grantingBrokers();
    // The owner holds its answer: until it subscribes there, nothing else delivers queue 1's messages.
    let answer = (): void => {};
    owner.on('subscribe', (frame, session) => {
      answer = () => session.send({ type: 'subscribed', id: frame.id, subscriptionId: 1 });
    });
    const consumer = createConsumer(home.endpoint, { listener: acking().listener, maxCachedMessages: 8 });
    const told = tellMap();
    await consumer.start();
    await told;
    // The link's subscribe comes a connect and a handshake after the map: a rescope on the map
    // alone (the link made, not yet subscribed) would have reached the home broker by now.
    await owner.waitForFrames('subscribe');
    expect(home.framesOf('subscribe')).toHaveLength(1);
    expect(home.framesOf('unsubscribe')).toEqual([]);
    answer();
    const [, owned] = await home.waitForFrames('subscribe', 2);
    expect(owned).toMatchObject({ scope: 'owned' });
  });

  it('processes what its own subscription delivered before the broker answered the unsubscribe of its move, and releases what comes later', async () => {
    const { home, tellMap } = await grantingBrokers();
    const { processed, listener } = acking();
    const written = home.lease(FakeBroker.deliveredMessage({ messageId: 'c'.repeat(32) }));
    const stray = home.lease(FakeBroker.deliveredMessage({ messageId: 'd'.repeat(32) }));
    // The home broker writes a delivery of the subscription over every queue right before it
    // answers the unsubscribe that moves it onto its own queues (it was on its way)…
    let moved = false;
    home.on('unsubscribe', (frame, session) => {
      // Only the move's: the consumer also unsubscribes the stray's subscription once more.
      if (moved) return session.send({ type: 'ok', id: frame.id });
      moved = true;
      session.send({ type: 'deliver', subscriptionId: frame.subscriptionId, messages: [written] });
      session.send({ type: 'ok', id: frame.id });
      // …and, once that one is acknowledged, one more for the subscription it ended.
      home.on('ack', (ack, ackSession) => {
        ackSession.send({ type: 'settled', id: ack.id, failures: [] });
        ackSession.send({ type: 'deliver', subscriptionId: frame.subscriptionId, messages: [stray] });
      });
    });
    const consumer = createConsumer(home.endpoint, { listener, maxCachedMessages: 8 });
    const told = tellMap();
    await consumer.start();
    await told;
    const [ack] = await home.waitForFrames('ack');
    const [release] = await home.waitForFrames('release');
    // Its handle lived on the open session: processed and acknowledged, not handed back.
    expect(ack?.receiptHandles).toEqual([written.receiptHandle]);
    // Past the answer the subscription is gone: a stray, handed back at once, never processed.
    expect(release?.receiptHandles).toEqual([stray.receiptHandle]);
    expect(processed).toEqual([written.messageId]);
  });

  it('retires the session with an owner the map no longer names, and takes every queue on its own subscription again when an owner has no endpoint', async () => {
    const { home, owner, tellMap } = await grantingBrokers();
    const { listener } = acking();
    const consumer = createConsumer(home.endpoint, { listener, maxCachedMessages: 8, routeToOwners: true });
    const told = tellMap();
    await consumer.start();
    await told;
    await home.waitForFrames('subscribe', 2);
    const ownerSession = await owner.waitForSession(1);
    // The owner is gone from the map, and queue 1's owner is one without an endpoint here.
    home.sessions[0]?.send(
      twoOwnerQueueMap(home, owner, { owners: ['home', 'elsewhere'], endpoints: { home: home.endpoint } }),
    );
    await ownerSession.closed;
    const [, , again] = await home.waitForFrames('subscribe', 3);
    expect(again).not.toHaveProperty('scope');
    expect(again?.maxCachedMessages).toBeLessThanOrEqual(8);
  });

  it('subscribes as before on a broker that grants nothing', async () => {
    const plain = await brokers.start();
    const consumer = createConsumer(plain.endpoint, { listener: acking().listener, routeToOwners: true });
    await consumer.start();
    const [subscribe] = await plain.waitForFrames('subscribe');
    expect(subscribe).not.toHaveProperty('scope');
    expect(plain.framesOf('subscribe')).toHaveLength(1);
  });

  it('asks for nothing with routeToOwners: false', async () => {
    const { home } = await grantingBrokers();
    const consumer = createConsumer(home.endpoint, { listener: acking().listener, routeToOwners: false });
    await consumer.start();
    expect(home.sessions[0]?.hello).not.toHaveProperty('features');
    const [own] = await home.waitForFrames('subscribe');
    expect(own).not.toHaveProperty('scope');
  });
});
