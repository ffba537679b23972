import { FakeBroker, twoOwnerQueueMap } from '@ricochet/client-testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsumeResult } from './consume-result.js';
import { pushConsumersPerTest } from './push-consumer.fixture.js';

/**
 * docs/protocol/README.md#credit-lending: a push consumer whose owners grant `creditLending` lends
 * its `maxCachedMessages` as one pool to its owned-scope subscriptions: a `creditWanted` is
 * answered with `credit` out of what the pool has, a `creditReturned` puts credit back for the
 * others, and the owners never hold more than the pool in all.
 */
const { brokers, createConsumer } = pushConsumersPerTest();

const owners: FakeBroker[] = [];
afterEach(async () => {
  await Promise.all(owners.splice(0).map((owner) => owner.close()));
});

async function lendingBrokers(ownerFeatures: readonly string[] = ['ownedSubscriptions', 'creditLending']) {
  const home = await brokers.start({
    welcomeExtra: { features: ['queueMap', 'ownedSubscriptions', 'creditLending'] },
  });
  const owner = await FakeBroker.start({ welcomeExtra: { features: ownerFeatures } });
  owners.push(owner);
  const map = twoOwnerQueueMap(home, owner);
  const told = home.waitForSession(1).then((session) => session.send(map));
  return { home, owner, told };
}

/** Until `predicate` holds, a turn at a time; bounded by the test's timeout. */
async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((resolve) => setTimeout(resolve, 5));
}

const creditsTo = (broker: FakeBroker, subscriptionId: number) =>
  broker
    .framesOf('credit')
    .filter((frame) => frame.subscriptionId === subscriptionId)
    .reduce((sum, frame) => sum + frame.credits, 0);

describe('a push consumer lending its credit to the queue owners', () => {
  it('opens first loans within maxCachedMessages, and lends what one owner gives back to another that wants it', async () => {
    const { home, owner, told } = await lendingBrokers();
    const consumer = createConsumer(home.endpoint, {
      listener: async () => ConsumeResult.SUCCESS,
      maxCachedMessages: 4,
      concurrency: 2,
      routeToOwners: true,
    });
    await consumer.start();
    await told;
    const [atOwner] = await owner.waitForFrames('subscribe');
    const [, ownHome] = await home.waitForFrames('subscribe', 2);
    expect(ownHome).toMatchObject({ scope: 'owned' });
    const ownerLoan = atOwner?.maxCachedMessages ?? 0;
    const homeLoan = ownHome?.maxCachedMessages ?? 0;
    expect(ownerLoan + homeLoan).toBeLessThanOrEqual(4);
    const ownerSubscription = owner.subscriptions[0]?.subscriptionId ?? -1;
    const homeSubscription = home.subscriptions[1]?.subscriptionId ?? -1;

    // The owner's first loan came while the own subscription still spanned every queue with a
    // window of its own: home held that credit (4, unspent, it had nothing to deliver), and the
    // pool counted it as out. Lending the owner credit too would have let a message in for room
    // the window already promised. Home's owned-scope subscription, once moved, holds credit.
    expect(ownerLoan).toBe(0);
    expect(homeLoan).toBeGreaterThan(0);

    // The owner has more messages than credit: it is lent what the pool has free, and no more.
    const free = 4 - ownerLoan - homeLoan;
    owner.sessions[0]?.send({
      type: 'creditWanted',
      subscriptionId: ownerSubscription,
      ready: 10,
      late: true,
    });
    await until(() => creditsTo(owner, ownerSubscription) >= free);
    // It still has messages, and asks for them: nothing is free now, so nothing more is lent.
    owner.sessions[0]?.send({
      type: 'creditWanted',
      subscriptionId: ownerSubscription,
      ready: 10 - free,
      late: true,
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(creditsTo(owner, ownerSubscription)).toBe(free);
    // Home has nothing to deliver and gives its loan back: the owner, which asked, is lent it.
    home.sessions[0]?.send({ type: 'creditReturned', subscriptionId: homeSubscription, credits: homeLoan });
    await until(() => creditsTo(owner, ownerSubscription) > free);
    expect(creditsTo(owner, ownerSubscription)).toBe(4 - ownerLoan);
    // Home asks again: the pool is spent, so it waits.
    home.sessions[0]?.send({ type: 'creditWanted', subscriptionId: homeSubscription, ready: 5, late: false });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(creditsTo(home, homeSubscription)).toBe(0);

    // The owner delivers what it holds; as the results go back, their credit is lent to home.
    const messages = Array.from({ length: 4 }, (_, i) =>
      FakeBroker.deliveredMessage({ messageId: `${i}`.padStart(32, 'c') }),
    );
    owner.push(...messages);
    await until(() => owner.leases.size === 0 && owner.pushReady.length === 0);
    await until(() => creditsTo(home, homeSubscription) >= 4);
    expect(creditsTo(home, homeSubscription)).toBe(4);
    // The owner was lent nothing it did not ask for again.
    expect(creditsTo(owner, ownerSubscription)).toBe(4 - ownerLoan);
  });

  it('keeps a static share for an owner that does not grant creditLending, and lends the rest', async () => {
    const { home, owner, told } = await lendingBrokers(['ownedSubscriptions']);
    const consumer = createConsumer(home.endpoint, {
      listener: async () => ConsumeResult.SUCCESS,
      maxCachedMessages: 8,
      concurrency: 4,
      routeToOwners: true,
    });
    await consumer.start();
    await told;
    const [atOwner] = await owner.waitForFrames('subscribe');
    const [, ownHome] = await home.waitForFrames('subscribe', 2);
    expect(atOwner?.maxCachedMessages).toBeLessThanOrEqual(4);
    // Home borrows from what the owner's share leaves: 8 - 4.
    expect(ownHome?.maxCachedMessages).toBeLessThanOrEqual(4);
    const homeSubscription = home.subscriptions[1]?.subscriptionId ?? -1;
    home.sessions[0]?.send({
      type: 'creditWanted',
      subscriptionId: homeSubscription,
      ready: 100,
      late: false,
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect((ownHome?.maxCachedMessages ?? 0) + creditsTo(home, homeSubscription)).toBeLessThanOrEqual(4);
  });
});
