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
});
