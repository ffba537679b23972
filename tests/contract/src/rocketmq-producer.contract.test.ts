import { describe, expect, it } from 'vitest';
import { startRocketBroker, startRocketProducer, startRocketSimpleConsumer } from './support/rocketmq.js';

describe('RocketMQ 5 Node client, unchanged: producer', () => {
  it('sends a normal message that a Ricochet group then holds, with the client message id kept', async () => {
    await using rocket = await startRocketBroker();
    await using consumer = await startRocketSimpleConsumer(rocket.endpoints, 'billing', { orders: '*' });
    await using producer = await startRocketProducer(rocket.endpoints, ['orders']);
    const receipt = await producer.send({
      topic: 'orders',
      tag: 'created',
      keys: ['o-1'],
      body: Buffer.from('hello'),
    });
    expect(receipt.offset).toBe(0);
    const [message] = await consumer.receive(1, 30_000);
    expect(message).toMatchObject({
      messageId: receipt.messageId,
      topic: 'orders',
      tag: 'created',
      keys: ['o-1'],
    });
    expect(message?.body.toString()).toBe('hello');
    // The client checks the MD5 body digest the broker sends, and marks a mismatch corrupted.
    expect(message?.corrupted).not.toBe(true);
  });

  it('sends FIFO messages with their message group, consumed in order per group (P5)', async () => {
    await using rocket = await startRocketBroker();
    await rocket.broker.admin.putTopic('ledger', { type: 'fifo' });
    await rocket.broker.admin.putGroup('books', { fifo: true });
    await using consumer = await startRocketSimpleConsumer(rocket.endpoints, 'books', { ledger: '*' });
    await using producer = await startRocketProducer(rocket.endpoints, ['ledger']);
    for (const body of ['a1', 'a2'])
      await producer.send({ topic: 'ledger', messageGroup: 'a', body: Buffer.from(body) });
    // One message group at a time: the second waits until the first is settled.
    const first = await consumer.receive(32, 30_000);
    expect(first.map((message) => [message.messageGroup, message.body.toString()])).toEqual([['a', 'a1']]);
    if (!first[0]) throw new Error('no message');
    await consumer.ack(first[0]);
    const second = await consumer.receive(32, 30_000);
    expect(second.map((message) => message.body.toString())).toEqual(['a2']);
  });

  it('sends a delay message that is delivered no earlier than asked (T1)', async () => {
    await using rocket = await startRocketBroker();
    await using consumer = await startRocketSimpleConsumer(
      rocket.endpoints,
      'billing',
      { orders: '*' },
      5_000,
    );
    await using producer = await startRocketProducer(rocket.endpoints, ['orders']);
    const before = Date.now();
    const receipt = await producer.send({ topic: 'orders', delay: 1_000, body: Buffer.from('later') });
    const [message] = await consumer.receive(1, 30_000);
    expect(message?.messageId).toBe(receipt.messageId);
    expect(Date.now() - before).toBeGreaterThanOrEqual(1_000);
  });

  it('a topic that does not exist, with auto-create off, fails the send with 40402 and stores nothing', async () => {
    await using rocket = await startRocketBroker({ autoCreateTopics: false });
    await using producer = await startRocketProducer(rocket.endpoints);
    await expect(producer.send({ topic: 'nowhere', body: Buffer.from('x') })).rejects.toMatchObject({
      code: 40402,
    });
    expect((await rocket.broker.admin.listTopics()).topics).toEqual([]);
  });
});
