import type { BrokerConfigInput } from '@ricochet/broker';
import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import { ConsumeResult, type MessageView } from 'rocketmq-client-nodejs';
import { describe, expect, it } from 'vitest';
import { eventually } from './support/push.js';
import { startRocketBroker, startRocketProducer, startRocketPushConsumer } from './support/rocketmq.js';

/** Every delivery a listener saw, and a way to wait for the `count`th. */
function recorder() {
  const deliveries: MessageView[] = [];
  /** `performance.now()` when each delivery reached the listener. */
  const atMs: number[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  return {
    deliveries,
    atMs,
    record(message: MessageView) {
      deliveries.push(message);
      atMs.push(performance.now());
      for (const waiter of waiters.filter((w) => deliveries.length >= w.count)) waiter.resolve();
    },
    delivered(count: number): Promise<MessageView[]> {
      if (deliveries.length >= count) return Promise.resolve(deliveries);
      return new Promise((resolve) => waiters.push({ count, resolve: () => resolve(deliveries) }));
    },
  };
}

/**
 * A broker, a topic and group set up as asked, an official push consumer of the group on the topic
 * whose listener records each delivery and answers with `verdict`, and an official producer:
 * everything a test needs, stopped by `await using`.
 */
async function pushScenario(options: {
  readonly topic: string;
  readonly group: string;
  readonly topicConfig?: TopicConfig;
  readonly groupConfig?: GroupConfigInput;
  readonly broker?: BrokerConfigInput;
  readonly verdict: (message: MessageView, seen: readonly MessageView[]) => ConsumeResult;
}) {
  const rocket = await startRocketBroker(options.broker);
  if (options.topicConfig) await rocket.broker.admin.putTopic(options.topic, options.topicConfig);
  if (options.groupConfig) await rocket.broker.admin.putGroup(options.group, options.groupConfig);
  const seen = recorder();
  const consumer = await startRocketPushConsumer(
    rocket.endpoints,
    options.group,
    { [options.topic]: '*' },
    {
      consume: (message) => {
        seen.record(message);
        return options.verdict(message, seen.deliveries);
      },
    },
  );
  const producer = await startRocketProducer(rocket.endpoints, [options.topic]);
  return {
    rocket,
    seen,
    producer,
    async [Symbol.asyncDispose]() {
      await producer.shutdown();
      await consumer.shutdown();
      await rocket[Symbol.asyncDispose]();
    },
  };
}

/**
 * P1–P5 through Apache's RocketMQ 5 Node client's PushConsumer, unchanged. A RocketMQ push
 * consumer receives with leases that live as long as the client (auto-renew), nacks with
 * ChangeInvisibleDuration and acks with AckMessage: the broker's rules are the same ones.
 */
describe('RocketMQ 5 Node client, unchanged: push consumer', () => {
  it('SUCCESS commits the message (P1)', async () => {
    await using scenario = await pushScenario({
      topic: 'orders',
      group: 'billing',
      verdict: () => ConsumeResult.SUCCESS,
    });
    const { rocket, seen, producer } = scenario;
    const sent = await producer.send({ topic: 'orders', body: Buffer.from('pay') });
    const [delivered] = await seen.delivered(1);
    expect(delivered).toMatchObject({ messageId: sent.messageId, deliveryAttempt: 1 });
    await eventually(
      () => rocket.broker.admin.getGroup('billing'),
      (group) => group.stats.committed === 1 && group.stats.inflight === 0,
    );
  });

  it('FAILURE is redelivered on the group’s schedule, with the next deliveryAttempt and the same messageId (P2, P3, P6)', async () => {
    const delayMs = 300;
    await using scenario = await pushScenario({
      topic: 'orders',
      group: 'billing',
      groupConfig: { retryPolicy: { type: 'fixed', delayMs } },
      verdict: (_, seen) => (seen.length === 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS),
    });
    const { rocket, seen, producer } = scenario;
    const sent = await producer.send({ topic: 'orders', body: Buffer.from('flaky') });
    const deliveries = await seen.delivered(2);
    expect(deliveries.map((message) => [message.messageId, message.deliveryAttempt])).toEqual([
      [sent.messageId, 1],
      [sent.messageId, 2],
    ]);
    // The group's delay, whatever the client asked for in its ChangeInvisibleDuration (the Node
    // client 1.0.8 asks for 0 ms): the delay counts from the failure, after the first delivery.
    const [first = 0, second = 0] = seen.atMs;
    expect(second - first).toBeGreaterThanOrEqual(delayMs);
    await eventually(
      () => rocket.broker.admin.getGroup('billing'),
      (group) => group.stats.committed === 1,
    );
  });

  it('a FIFO group delivers each message group in order (P5)', async () => {
    await using scenario = await pushScenario({
      topic: 'ledger',
      group: 'books',
      topicConfig: { type: 'fifo' },
      groupConfig: { fifo: true },
      verdict: () => ConsumeResult.SUCCESS,
    });
    const { seen, producer } = scenario;
    for (let index = 0; index < 6; index++) {
      const messageGroup = index % 2 === 0 ? 'account-a' : 'account-b';
      await producer.send({ topic: 'ledger', messageGroup, body: Buffer.from(`${messageGroup}:${index}`) });
    }
    const deliveries = await seen.delivered(6);
    const order = (group: string) =>
      deliveries
        .filter((message) => message.messageGroup === group)
        .map((message) => message.body.toString());
    expect(order('account-a')).toEqual(['account-a:0', 'account-a:2', 'account-a:4']);
    expect(order('account-b')).toEqual(['account-b:1', 'account-b:3', 'account-b:5']);
  });

  it('a message that fails every delivery goes to %DLQ%<group> at the failure of delivery maxRetries + 1 (P4)', async () => {
    await using scenario = await pushScenario({
      topic: 'orders',
      group: 'billing',
      // The group's schedule decides when each failure comes back (P3): millisecond-scale here.
      groupConfig: { maxRetries: 2, retryPolicy: { type: 'fixed', delayMs: 20 } },
      verdict: () => ConsumeResult.FAILURE,
    });
    const { rocket, seen, producer } = scenario;
    const sent = await producer.send({ topic: 'orders', body: Buffer.from('poison') });
    const deliveries = await seen.delivered(3);
    expect(deliveries.map((message) => message.deliveryAttempt)).toEqual([1, 2, 3]);
    const dlq = await eventually(
      () => rocket.broker.admin.listDlq('billing'),
      (page) => page.messages.length === 1,
    );
    expect(dlq.messages[0]?.messageId).toBe(sent.messageId);
    expect(seen.deliveries).toHaveLength(3);
  });
});
