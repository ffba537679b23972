import { deliveredMessage, FakeBroker, rejectionOf, twoOwnerQueueMap } from '@ricochet/client-testkit';
import type { QueueMapFrame, ReceiveFrame } from '@ricochet/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { simpleConsumersPerTest } from './simple-consumer.fixture.js';
import type { SimpleConsumerOptions } from './simple-consumer-options.js';

/**
 * DESIGN.md §9, docs/protocol/README.md#owned-receives: a simple consumer asks for the queue map
 * and `ownedReceives`, leases from every owner with `scope: 'owned'` (none waiting), settles each
 * message on the session that leased it, and waits through its `endpoint` broker; without a route
 * to every owner it receives as it always did.
 */
const { brokers, createConsumer } = simpleConsumersPerTest();

/** The second broker of a test, the owner of queue 1; closed after each test. */
const owners: FakeBroker[] = [];
afterEach(async () => {
  await Promise.all(owners.splice(0).map((owner) => owner.close()));
});

/** Messages `prefix-0`… ready at `broker`'s default receive handler. */
function ready(broker: FakeBroker, prefix: string, count: number): string[] {
  const ids = Array.from({ length: count }, (_, n) => `${prefix}-${n}`);
  for (const messageId of ids) broker.ready.push(deliveredMessage({ messageId, deliveryAttempt: 1 }));
  return ids;
}

/**
 * A home broker that grants the map and `ownedReceives` and tells the two-owner map, the owner of
 * queue 1 (which grants `ownedReceives`), and a started consumer given the home broker that asks
 * the owner too. It routes once its session there is open, which no event of the consumer tells:
 * it receives until the owner is asked (each receive answers with nothing until then).
 */
async function routedConsumer(options: Partial<SimpleConsumerOptions> = {}) {
  const home = await brokers.start({ welcomeExtra: { features: ['queueMap', 'ownedReceives'] } });
  const owner = await FakeBroker.start({ welcomeExtra: { features: ['ownedReceives'] } });
  owners.push(owner);
  const told = home.waitForSession(1).then((session) => session.send(twoOwnerQueueMap(home, owner)));
  const consumer = createConsumer(home.endpoint, options);
  await consumer.start();
  await told;
  await expect
    .poll(async () => {
      await consumer.receive(32, 30_000);
      return owner.framesOf('receive').length;
    })
    .toBeGreaterThan(0);
  return { home, owner, consumer };
}

const receivesOf = (broker: FakeBroker, after = 0): ReceiveFrame[] => broker.framesOf('receive').slice(after);

describe('a simple consumer receiving from queue owners', () => {
  it('asks for the map and ownedReceives, leases from each owner in turn, and settles each message where it was leased', async () => {
    const { home, owner, consumer } = await routedConsumer();
    expect(home.sessions[0]?.hello.features).toEqual(['queueMap', 'ownedReceives']);
    // The session with an owner asks for owned receives only: the map comes from the endpoint broker.
    expect(owner.sessions[0]?.hello.features).toEqual(['ownedReceives']);

    const before = { home: receivesOf(home).length, owner: receivesOf(owner).length };
    const ids = [...ready(home, 'home', 3), ...ready(owner, 'owner', 3)];
    const first = await consumer.receive(4, 30_000);
    const second = await consumer.receive(4, 30_000);
    expect([...first, ...second].map((message) => message.messageId).sort()).toEqual(ids.sort());
    expect(first).toHaveLength(4);
    // Each owner was asked for what the receive had left, with the owned scope, not waiting.
    const asked = [...receivesOf(home, before.home), ...receivesOf(owner, before.owner)];
    expect(asked.every((frame) => frame.scope === 'owned' && frame.awaitDurationMs === 0)).toBe(true);
    // 4 and 1 (what the first owner left), then the other owner first: 4, and 2.
    expect(asked.map((frame) => frame.maxMessages).sort()).toEqual([1, 2, 4, 4]);

    // A fake broker takes only the handles it leased (410 for any other): each ack went home to its lessor.
    await Promise.all([...first, ...second].map((message) => consumer.ack(message)));
    expect(home.framesOf('ack').flatMap((frame) => frame.receiptHandles)).toHaveLength(3);
    expect(owner.framesOf('ack').flatMap((frame) => frame.receiptHandles)).toHaveLength(3);
    expect(home.leases.size + owner.leases.size).toBe(0);
  });

  it('opens its sessions with the owners only once its start succeeded', async () => {
    const home = await brokers.start({ welcomeExtra: { features: ['queueMap', 'ownedReceives'] } });
    const owner = await FakeBroker.start({ welcomeExtra: { features: ['ownedReceives'] } });
    owners.push(owner);
    // The map comes before the registration is answered, and the first registration is refused:
    // only once a session with the owner opened, or after 300 ms without one. (A consumer that
    // opened it on the map would have it open by then: an absence has no event to await.)
    let refusals = 1;
    home.on('register', async (frame, session) => {
      session.send(twoOwnerQueueMap(home, owner));
      if (refusals-- <= 0) return session.send({ type: 'ok', id: frame.id });
      await Promise.race([owner.waitForSession(1), new Promise((resolve) => setTimeout(resolve, 300))]);
      session.send({ type: 'error', id: frame.id, code: 404, message: 'group "billing" does not exist' });
    });
    const consumer = createConsumer(home.endpoint);
    expect(await rejectionOf(consumer.start())).toMatchObject({ code: 404 });
    // Refused, it holds its own session only, though the map named another owner.
    expect(owner.sessions).toHaveLength(0);
    await consumer.start();
    // Started, it connects to the owner the map named.
    await owner.waitForSession(1);
    expect(owner.sessions[0]?.hello.features).toEqual(['ownedReceives']);
  });

  it('waits through the endpoint broker, over every queue, only when no owner had a message', async () => {
    const { home, owner, consumer } = await routedConsumer({ awaitDurationMs: 5_000 });
    const before = { home: receivesOf(home).length, owner: receivesOf(owner).length };
    const [id] = ready(owner, 'late', 1);
    // The endpoint broker waits on every queue: its owner's message arrives through it.
    home.on('receive', (frame, session) => {
      if (frame.scope === 'owned') {
        session.send({ type: 'messages', id: frame.id, messages: [] });
        return;
      }
      session.send({
        type: 'messages',
        id: frame.id,
        messages: [home.lease(deliveredMessage({ messageId: 'waited' }))],
      });
    });
    expect((await consumer.receive(4, 30_000)).map((message) => message.messageId)).toEqual([id]);
    const [waited] = await consumer.receive(4, 30_000);
    expect(waited?.messageId).toBe('waited');
    const homeAsked = receivesOf(home, before.home);
    // The first receive asked it for what the owner's one message left; the second waited there.
    expect(homeAsked.map((frame) => [frame.scope, frame.awaitDurationMs])).toEqual([
      ['owned', 0],
      ['owned', 0],
      [undefined, 5_000],
    ]);
    expect(receivesOf(owner, before.owner).map((frame) => [frame.scope, frame.awaitDurationMs])).toEqual([
      ['owned', 0],
      ['owned', 0],
    ]);
    await consumer.ack(waited as NonNullable<typeof waited>);
    expect(home.leases.size).toBe(0);
  });

  it('settles on the endpoint broker when the session that leased the message dropped', async () => {
    const { home, owner, consumer } = await routedConsumer();
    ready(owner, 'owner', 1);
    const [message] = await consumer.receive(1, 30_000);
    expect(message?.messageId).toBe('owner-0');
    // The owner takes the ack and drops the connection before answering (it stopped, or died).
    owner.on('ack', (_frame, session) => session.drop());
    home.on('ack', (frame, session) => session.send({ type: 'settled', id: frame.id, failures: [] }));
    await consumer.ack(message as NonNullable<typeof message>);
    expect(owner.framesOf('ack')).toHaveLength(1);
    expect(home.framesOf('ack').flatMap((frame) => frame.receiptHandles)).toEqual([
      owner.framesOf('ack')[0]?.receiptHandles[0],
    ]);
  });

  it('receives through the endpoint broker while a queue is between owners, or an owner does not grant the feature', async () => {
    const cases: [Partial<QueueMapFrame>, string[]][] = [
      [{ owners: ['home', null] }, ['ownedReceives']],
      [{}, []],
    ];
    for (const [fields, ownerFeatures] of cases) {
      const home = await brokers.start({ welcomeExtra: { features: ['queueMap', 'ownedReceives'] } });
      const owner = await FakeBroker.start({ welcomeExtra: { features: ownerFeatures } });
      owners.push(owner);
      const told = home
        .waitForSession(1)
        .then((session) => session.send(twoOwnerQueueMap(home, owner, fields)));
      const consumer = createConsumer(home.endpoint);
      await consumer.start();
      await told;
      if (ownerFeatures.length === 0) await owner.waitForSession(1);
      ready(home, 'm', 2);
      for (let n = 0; n < 5; n++) await consumer.receive(1, 30_000);
      expect(receivesOf(owner)).toEqual([]);
      expect(receivesOf(home).map((frame) => frame.scope)).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    }
  });

  it('works as before with a broker that predates the feature, and with routeToOwners false says today’s hello', async () => {
    const older = await brokers.start();
    const consumer = createConsumer(older.endpoint);
    ready(older, 'm', 1);
    expect(await consumer.receive(1, 30_000)).toHaveLength(1);
    expect(older.sessions[0]?.hello.features).toEqual(['queueMap', 'ownedReceives']);
    expect(receivesOf(older)[0]).not.toHaveProperty('scope');

    const home = await brokers.start({ welcomeExtra: { features: ['queueMap', 'ownedReceives'] } });
    const plain = createConsumer(home.endpoint, { routeToOwners: false });
    await plain.start();
    expect(home.sessions[0]?.hello).not.toHaveProperty('features');
  });
});
