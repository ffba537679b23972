import { describe, expect, it } from 'vitest';
import { startRocketBroker, startRocketProducer, startRocketSimpleConsumer } from './support/rocketmq.js';

/**
 * S1–S5 through Apache's RocketMQ 5 Node client's SimpleConsumer, unchanged: receive leases,
 * ack, changeInvisibleDuration, a lease that runs out, and max attempts into `%DLQ%<group>`.
 */
describe('RocketMQ 5 Node client, unchanged: simple consumer (S1–S5)', () => {
  it('receives and acks; an acked message is never delivered again (S3)', async () => {
    await using rocket = await startRocketBroker();
    await using consumer = await startRocketSimpleConsumer(rocket.endpoints, 'billing', { orders: '*' });
    await using producer = await startRocketProducer(rocket.endpoints, ['orders']);
    const sent = await producer.send({ topic: 'orders', body: Buffer.from('one') });
    const [message] = await consumer.receive(1, 30_000);
    expect(message?.messageId).toBe(sent.messageId);
    expect(message?.deliveryAttempt).toBe(1);
    if (!message) throw new Error('no message');
    await consumer.ack(message);
    expect((await rocket.broker.admin.getGroup('billing')).stats).toMatchObject({
      committed: 1,
      inflight: 0,
    });
    // A second ack of the same handle is refused: the message is not committed twice.
    await expect(consumer.ack(message)).rejects.toMatchObject({ code: 40013 });
    expect(await consumer.receive(1, 30_000)).toEqual([]);
  });

  it('a lease that runs out makes the message Ready again with deliveryAttempt 2 (S1, S2, P6)', async () => {
    await using rocket = await startRocketBroker();
    await using consumer = await startRocketSimpleConsumer(rocket.endpoints, 'billing', { orders: '*' });
    await using producer = await startRocketProducer(rocket.endpoints, ['orders']);
    const sent = await producer.send({ topic: 'orders', body: Buffer.from('lease') });
    const [first] = await consumer.receive(1, 20);
    expect(first?.deliveryAttempt).toBe(1);
    // The 20 ms lease runs out while the long poll waits, and the message comes back.
    const [second] = await consumer.receive(1, 30_000);
    expect(second).toMatchObject({ messageId: sent.messageId, deliveryAttempt: 2 });
  });

  it('changeInvisibleDuration keeps the message invisible under a new handle; the old one stops working (S4)', async () => {
    await using rocket = await startRocketBroker();
    await using consumer = await startRocketSimpleConsumer(rocket.endpoints, 'billing', { orders: '*' });
    await using producer = await startRocketProducer(rocket.endpoints, ['orders']);
    await producer.send({ topic: 'orders', body: Buffer.from('extend') });
    const [message] = await consumer.receive(1, 500);
    if (!message) throw new Error('no message');
    const oldHandle = message.receiptHandle;
    await consumer.changeInvisibleDuration(message, 60_000);
    expect(message.receiptHandle).not.toBe(oldHandle);
    // Past the first lease's 500 ms, the message is still invisible.
    expect(await consumer.receive(1, 30_000)).toEqual([]);
    const stale = Object.assign(Object.create(Object.getPrototypeOf(message)), message, {
      receiptHandle: oldHandle,
    });
    await expect(consumer.ack(stale)).rejects.toMatchObject({ code: 40013 });
    await consumer.ack(message);
    expect((await rocket.broker.admin.getGroup('billing')).stats).toMatchObject({ committed: 1 });
  });

  it('the delivery past maxRetries + 1 moves the message to %DLQ%<group> instead (S5, D1)', async () => {
    await using rocket = await startRocketBroker();
    await rocket.broker.admin.putGroup('billing', { maxRetries: 1 });
    await using consumer = await startRocketSimpleConsumer(rocket.endpoints, 'billing', { orders: '*' });
    await using producer = await startRocketProducer(rocket.endpoints, ['orders']);
    const sent = await producer.send({ topic: 'orders', body: Buffer.from('poison') });
    const attempts: number[] = [];
    for (let receive = 0; receive < 2; receive++) {
      const [message] = await consumer.receive(1, 20);
      attempts.push(message?.deliveryAttempt ?? 0);
    }
    expect(attempts).toEqual([1, 2]);
    // The third delivery would exceed maxRetries + 1: the message is in the DLQ, not delivered.
    expect(await consumer.receive(1, 20)).toEqual([]);
    const dlq = await rocket.broker.admin.listDlq('billing');
    expect(dlq.messages.map((message) => message.messageId)).toEqual([sent.messageId]);

    // D1: the DLQ is a topic like any other, read here by the same official client.
    await rocket.broker.admin.putGroup('dlq-reader', { startFrom: 'earliest' });
    await using dlqConsumer = await startRocketSimpleConsumer(rocket.endpoints, 'dlq-reader', {
      '%DLQ%billing': '*',
    });
    const [dead] = await dlqConsumer.receive(1, 30_000);
    expect(dead?.messageId).toBe(sent.messageId);
    expect(dead?.body.toString()).toBe('poison');
  });
});
